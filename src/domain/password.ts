// The join account's password, read through its secret reference when the join needs it (the
// value is scrubbed from every event from then on). Both systems hand it to the join tool on
// standard input, where a NUL would cut it short.
import type { StepContext } from '../engine/step.ts';
import type { DomainJoinSpec } from '../config/schema/index.ts';
import { ConfigError } from '../errors.ts';

export const PASSWORD_FIELD = 'spec.domainJoin.credentials.password';

export async function readJoinPassword(ctx: StepContext, credentials: NonNullable<DomainJoinSpec['credentials']>): Promise<string> {
  const password = await ctx.secret(credentials.password, PASSWORD_FIELD);
  if (password.includes('\0')) throw new ConfigError([{ path: PASSWORD_FIELD, message: 'the value read holds a NUL character', hint: 'check the file or variable it comes from' }]);
  return password;
}

/**
 * The variable the password is read from, if any: every adcli call leaves it out of its
 * environment (testjoin needs no password, and none of them may inherit it).
 */
export function passwordEnvNames(credentials: DomainJoinSpec['credentials']): string[] {
  const source = credentials?.password;
  return typeof source === 'object' && 'env' in source.valueFrom ? [source.valueFrom.env] : [];
}
