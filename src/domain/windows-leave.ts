// The undo of the Windows domain join (machineadm reset), through the Windows seam. A machine
// joined online (Add-Computer) leaves with Remove-Computer and the join's own credentials source
// (the password on PowerShell's standard input): the computer account is disabled in the directory
// (Windows does not delete it). A machine joined offline (djoin: no credential ever reached it),
// or one that cannot reach a domain controller, leaves on this machine only, and reset names the
// computer account that stays in the directory for its administrators to remove. Windows finishes
// leaving at the next boot: the record keeps the boot the leave happened in, and reset/restart
// ends the reset with "restart required" (exit 4), as a join ends init.
import type { CheckResult, Change, UndoContext, ApplyResult } from '../engine/step.ts';
import type { DomainJoinSpec } from '../config/schema/index.ts';
import type { DomainLeaveOutcome } from '../host/index.ts';
import { tail } from '../host/index.ts';
import { ConfigError, StepDetailsError } from '../errors.ts';
import { noSeamSkip, requireSeam, seamOf } from '../windows/steps/seam.ts';
import { readJoinPassword } from './password.ts';
import { realmOf } from './adcli.ts';
import { windowsCodeKind, type WindowsJoinMethod } from './windows-join.ts';

/** The workgroup a machine that leaves goes to (Remove-Computer's default). */
export const WORKGROUP = 'WORKGROUP';
const OUTPUT_TAIL_LINES = 30;

export interface WindowsJoined {
  domain: string;
  method: WindowsJoinMethod;
  computerName?: string;
}

export function windowsJoinedOf(data: Record<string, unknown> | undefined): WindowsJoined | undefined {
  if (typeof data?.domain !== 'string' || (data.method !== 'Add-Computer' && data.method !== 'djoin')) return undefined;
  return { domain: data.domain, method: data.method, ...(typeof data.computerName === 'string' ? { computerName: data.computerName } : {}) };
}

/** Online (with the join's credentials) for an Add-Computer join; on this machine only for djoin's. */
function online(joined: WindowsJoined): boolean {
  return joined.method === 'Add-Computer';
}

function credentialsOf(ctx: UndoContext): DomainJoinSpec['credentials'] {
  return ctx.config.spec.domainJoin?.credentials;
}

const LEAVE_LOCALLY_HINT = 'or keep the membership with --keep-domain';

export async function windowsLeavePreflight(ctx: UndoContext): Promise<void> {
  const joined = windowsJoinedOf(ctx.done?.data);
  if (!joined || ctx.options.keepDomain || !seamOf(ctx) || !online(joined)) return;
  const credentials = credentialsOf(ctx);
  if (credentials === undefined) {
    throw new ConfigError([{ path: 'spec.domainJoin.credentials', message: `reset leaves ${joined.domain} with the credentials the join used (Remove-Computer disables the computer account), and the configuration has none`, hint: `give the configuration the join used (-c FILE), ${LEAVE_LOCALLY_HINT}` }]);
  }
  await readJoinPassword(ctx, credentials);
}

function plannedChanges(ctx: UndoContext, joined: WindowsJoined, name: string): Change[] {
  const how = online(joined)
    ? `Remove-Computer as ${credentialsOf(ctx)?.username ?? '(no credentials)'}, password on standard input: the computer account ${name} is disabled in ${joined.domain} (Windows does not delete it); on this machine only if no domain controller answers`
    : `on this machine only (an offline join: no credential is on the machine): the computer account ${name} stays in ${joined.domain}; its administrators remove it`;
  return [
    { action: 'leave', target: joined.domain, detail: `${how}; the machine moves to workgroup ${WORKGROUP}` },
    { action: 'restart', target: 'the machine', detail: 'Windows finishes leaving at the next boot: reset ends with exit 4 (restart required)' },
  ];
}

export async function windowsLeaveCheck(ctx: UndoContext): Promise<CheckResult> {
  const joined = windowsJoinedOf(ctx.done?.data);
  if (!joined) return { done: true, changes: [] };
  const windows = seamOf(ctx);
  const system = windows ? await windows.computerSystem() : undefined;
  // A plan made elsewhere knows the name only when the configuration gave it (an offline join takes the blob's).
  const name = system?.name ?? joined.computerName ?? '(the name in the offline blob)';
  if (ctx.options.keepDomain) return { done: false, changes: [], skipReason: `--keep-domain: the machine stays ${name} in ${joined.domain}` };
  // Left in an earlier reset (this boot or before), or not a member of that domain any more.
  if (typeof ctx.previous?.data?.left === 'string') return { done: true, changes: [] };
  const member = system?.partOfDomain === true && system.domain.replace(/\.$/, '').toLowerCase() === joined.domain.toLowerCase();
  // Joined in this boot and not a member yet: nothing can be left before the restart, after which
  // the machine would be a member that reset said it had taken out of the domain.
  const joinBoots = ctx.undoRecord?.joinBoots as Record<string, unknown> | undefined;
  if (system && !member && ctx.facts.bootId !== undefined && joinBoots?.[ctx.facts.bootId] !== undefined) {
    return { done: false, changes: [{ action: 'refuse', target: joined.domain, detail: `the join of ${joined.domain} waits for the restart that finishes it (${joined.method}, in this boot): restart the machine first (init then resumes), then run reset; or keep the membership with --keep-domain` }] };
  }
  if (system && !member) return { done: true, changes: [] };
  const skip = noSeamSkip(ctx);
  return { done: false, changes: plannedChanges(ctx, joined, name), ...(skip ? { skipReason: skip } : {}) };
}

function scrub(text: string, password: string): string {
  return password === '' ? text : text.split(password).join('<redacted>');
}

/** What a refused leave means, named as the join's failures are. */
function leaveFailure(outcome: DomainLeaveOutcome, joined: WindowsJoined, name: string, user: string): { kind: string; message: string; hint: string } {
  if (outcome.code === 1317 || outcome.code === 2221) {
    return { kind: 'account-not-found', message: `the computer account ${name} does not exist in ${joined.domain} (someone deleted it in the directory)`, hint: 'nothing is left in the directory to disable' };
  }
  const kind = windowsCodeKind(outcome.code);
  switch (kind) {
    case 'credentials':
      return { kind, message: `the domain rejected the credentials of ${user}@${realmOf(joined.domain)}`, hint: `check spec.domainJoin.credentials (wrong, expired or locked password, unknown user), ${LEAVE_LOCALLY_HINT}` };
    case 'not-permitted':
      return { kind, message: `${user} has insufficient permissions to disable the computer account ${name} in ${joined.domain} (the directory denied the write)`, hint: `use an account allowed to change computer accounts in its OU (the one that joined it), ${LEAVE_LOCALLY_HINT}` };
    case 'unreachable':
      return { kind, message: `no domain controller of ${joined.domain} could be reached`, hint: `check the network and DNS, ${LEAVE_LOCALLY_HINT}` };
    default:
      return { kind: 'other', message: `Remove-Computer could not leave ${joined.domain}`, hint: 'read the output tail (the error id and Windows\' message)' };
  }
}

export async function windowsLeaveApply(ctx: UndoContext): Promise<ApplyResult> {
  const joined = windowsJoinedOf(ctx.done?.data)!;
  const windows = requireSeam(ctx);
  const name = (await windows.computerSystem()).name;
  const record = (account: 'disabled' | 'kept' | 'not-found' | 'left-before') => ({ left: joined.domain, computerName: name, account, ...(ctx.facts.bootId ? { bootId: ctx.facts.bootId } : {}) });
  const locally = async (why: string, account: 'kept' | 'not-found' = 'kept'): Promise<ApplyResult> => {
    const outcome = await windows.leaveDomainLocally(WORKGROUP);
    if (!outcome.left) {
      throw new StepDetailsError(`could not leave ${joined.domain} on this machine (UnjoinDomainOrWorkgroup${outcome.code !== undefined ? `, code ${outcome.code}` : ''})`, { domain: joined.domain, ...(outcome.code !== undefined ? { exitCode: outcome.code } : {}) }, { hint: 'read Windows\' message; leave the domain by hand (System Properties), then run reset with --keep-domain' });
    }
    const accountLine = account === 'kept' ? `the computer account ${name} stays in ${joined.domain}; remove it in the directory` : 'nothing of it is left in the directory';
    const warning = `left ${joined.domain} on this machine only (${why}): ${accountLine}. Windows finishes leaving at the next boot`;
    ctx.log(warning, 'warning');
    return { warning, record: record(account) };
  };
  if (!online(joined)) return locally('an offline join: no credential is on the machine');
  const credentials = credentialsOf(ctx);
  if (credentials === undefined) throw new StepDetailsError('the configuration has no spec.domainJoin.credentials to leave the domain with', {}, { hint: `give the configuration the join used (-c FILE), ${LEAVE_LOCALLY_HINT}` });
  const password = await readJoinPassword(ctx, credentials);
  const outcome = await windows.leaveDomain({ user: credentials.username, workgroup: WORKGROUP, ...(ctx.config.spec.domainJoin?.domainController !== undefined ? { server: ctx.config.spec.domainJoin.domainController } : {}) }, password);
  const output = scrub(outcome.message ?? '', password);
  if (output) for (const line of output.split(/\r?\n/).filter((l) => l.trim())) ctx.output(line);
  if (outcome.left) {
    ctx.log(`left ${joined.domain}: the computer account ${name} is disabled (Remove-Computer); Windows finishes leaving at the next boot`);
    return { record: record('disabled') };
  }
  if (outcome.reachable === false) return locally(`no domain controller of ${joined.domain} answered`);
  // 2692 (NERR_SetupNotJoined): a reset killed after Remove-Computer and before its record left
  // already; Windows finishes at the next boot.
  if (outcome.code === 2692) {
    ctx.log(`left ${joined.domain} before (a reset that was stopped); Windows finishes leaving at the next boot`);
    return { record: record('left-before') };
  }
  const failure = leaveFailure(outcome, joined, name, credentials.username);
  // Nothing to disable: the leave on this machine is all that is left to do.
  if (failure.kind === 'account-not-found') return locally(failure.message, 'not-found');
  throw new StepDetailsError(`${failure.message} (Remove-Computer${outcome.code !== undefined ? `, code ${outcome.code}` : ''})`, {
    domain: joined.domain,
    tool: 'Remove-Computer',
    failure: failure.kind,
    ...(outcome.code !== undefined ? { exitCode: outcome.code } : {}),
    ...(outcome.errorId !== undefined ? { errorId: outcome.errorId } : {}),
    outputTail: tail(output.replace(/\r\n/g, '\n'), OUTPUT_TAIL_LINES),
  }, { hint: failure.hint });
}
