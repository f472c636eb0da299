// The undo of domain/join (machineadm reset): the machine leaves the domain it joined, with the
// credentials source the join used. Linux: `adcli delete-computer` removes the computer account
// (the keytab and krb5.conf are then given back by reset/files from their records). Windows:
// ./windows-leave.ts (Remove-Computer, or a leave on this machine only). With --keep-domain
// nothing changes and reset/files keeps the keytab and krb5.conf as they are.
import type { CheckResult, Undo, UndoContext } from '../engine/step.ts';
import type { DomainJoinSpec } from '../config/schema/index.ts';
import { ConfigError, StepDetailsError } from '../errors.ts';
import { tail } from '../host/index.ts';
import { classifyJoinFailure, realmOf, testjoinSaysAccountGone } from './adcli.ts';
import { passwordEnvNames, readJoinPassword } from './password.ts';
import { KRB5_CONF } from './krb5-conf.ts';
import { windowsLeaveApply, windowsLeaveCheck, windowsLeavePreflight } from './windows-leave.ts';

const LEAVE_TIMEOUT_MS = 5 * 60_000;

interface Joined {
  domain: string;
  computerName: string;
  keytab: string;
}

function joinedOf(ctx: UndoContext): Joined | undefined {
  const data = ctx.done?.data;
  if (typeof data?.computerName !== 'string' || typeof data.domain !== 'string' || typeof data.keytab !== 'string') return undefined;
  return { domain: data.domain, computerName: data.computerName, keytab: data.keytab };
}

/** adcli delete-computer's command line: the password on standard input only. */
export function adcliDeleteArgv(joined: Joined, dj: DomainJoinSpec | undefined, username: string): [string, ...string[]] {
  return [
    'adcli',
    'delete-computer',
    '--domain',
    joined.domain,
    ...(dj?.domainController !== undefined ? ['--domain-controller', dj.domainController] : []),
    '--login-user',
    username,
    '--stdin-password',
    '--verbose',
    joined.computerName,
  ];
}

function credentialsOf(ctx: UndoContext): NonNullable<DomainJoinSpec['credentials']> | undefined {
  return ctx.config.spec.domainJoin?.credentials;
}

/** The files --keep-domain keeps as the join left them. */
export function domainFiles(ctx: UndoContext): string[] {
  const joined = joinedOf(ctx);
  if (!joined || !ctx.options.keepDomain) return [];
  return [joined.keytab, ...(ctx.done?.data?.krb5Conf === 'written' ? [KRB5_CONF] : [])];
}

export const domainLeave: Undo = {
  summary: 'leave the domain with the credentials the join used: the computer account is deleted (Linux: adcli delete-computer) or disabled (Windows: Remove-Computer)',
  keeps: domainFiles,
  async preflight(ctx) {
    if (ctx.facts.os === 'windows') return windowsLeavePreflight(ctx);
    if (!joinedOf(ctx) || ctx.options.keepDomain || !ctx.facts.liveRoot || ctx.facts.os !== 'linux') return;
    const credentials = credentialsOf(ctx);
    if (credentials === undefined) {
      throw new ConfigError([{ path: 'spec.domainJoin.credentials', message: 'reset leaves the domain with the credentials the join used, and the configuration has none', hint: 'give the configuration the join used (-c FILE), or keep the membership with --keep-domain' }]);
    }
    await readJoinPassword(ctx, credentials);
  },
  async check(ctx): Promise<CheckResult> {
    if (ctx.facts.os === 'windows') return windowsLeaveCheck(ctx);
    const joined = joinedOf(ctx);
    if (!joined) return { done: true, changes: [] };
    const username = credentialsOf(ctx)?.username ?? '(no credentials)';
    const changes = [{ action: 'leave', target: joined.domain, detail: `adcli delete-computer ${joined.computerName} as ${username}@${realmOf(joined.domain)}, password on standard input` }];
    if (ctx.options.keepDomain) return { done: false, changes: [], skipReason: `--keep-domain: the machine stays ${joined.computerName} in ${joined.domain}, with ${domainFiles(ctx).join(' and ')}` };
    if (!ctx.facts.liveRoot) return { done: false, changes, skipReason: `leaving the domain changes the directory: not run under --root ${ctx.host.fs.root}` };
    // A keytab removed from the machine leaves the account in the directory: delete-computer needs
    // only the user's credentials, and testjoin (which needs the keytab) cannot tell it is gone.
    if ((await ctx.host.fs.exists(joined.keytab)) && (await ctx.host.proc.which('adcli'))) {
      const dc = ctx.config.spec.domainJoin?.domainController;
      const argv = ['adcli', 'testjoin', '--domain', joined.domain, ...(dc !== undefined ? ['--domain-controller', dc] : []), '--host-keytab', joined.keytab] as const;
      const test = await ctx.host.proc.run([...argv], { timeoutMs: 60_000, allowFailure: true, withoutEnv: passwordEnvNames(credentialsOf(ctx)) }).catch(() => undefined);
      // Left already (a reset killed after the account went): the directory no longer knows the
      // keytab's account. A domain controller that does not answer is not that: the account is
      // still there, and delete-computer says why it cannot be removed.
      if (test !== undefined && test.exitCode !== 0 && testjoinSaysAccountGone(`${test.stdout}\n${test.stderr}`)) return { done: true, changes: [] };
    }
    return { done: false, changes };
  },
  async apply(ctx) {
    if (ctx.facts.os === 'windows') return windowsLeaveApply(ctx);
    const joined = joinedOf(ctx)!;
    const credentials = credentialsOf(ctx);
    if (credentials === undefined) throw new StepDetailsError('the configuration has no spec.domainJoin.credentials to leave the domain with', {}, { hint: 'give the configuration the join used (-c FILE), or --keep-domain' });
    if (!(await ctx.host.proc.which('adcli'))) throw new StepDetailsError('adcli is not installed (not found on PATH)', {}, { hint: 'install adcli, or delete the computer account in the directory and run reset with --keep-domain' });
    const password = await readJoinPassword(ctx, credentials);
    const lines: string[] = [];
    const scrub = (line: string): string => (password === '' ? line : line.split(password).join('<redacted>'));
    const result = await ctx.host.proc.run(adcliDeleteArgv(joined, ctx.config.spec.domainJoin, credentials.username), {
      input: password,
      withoutEnv: passwordEnvNames(credentials),
      timeoutMs: LEAVE_TIMEOUT_MS,
      allowFailure: true,
      onLine: (line) => {
        lines.push(scrub(line));
        ctx.output(scrub(line));
      },
    });
    const output = tail(lines.join('\n'), 30);
    if (result.exitCode !== 0 && !/no computer account for .* exists/i.test(output)) {
      const failure = classifyJoinFailure(output, ctx.config.spec.domainJoin!, credentials.username);
      throw new StepDetailsError(`could not delete the computer account ${joined.computerName} in ${joined.domain}: ${failure.message} (adcli delete-computer, exit code ${result.exitCode})`, { domain: joined.domain, failure: failure.kind, exitCode: result.exitCode, outputTail: output }, { hint: failure.hint });
    }
    ctx.log(`left ${joined.domain}: computer account ${joined.computerName} deleted`);
    return { record: { left: joined.domain, computerName: joined.computerName } };
  },
};
