// The domain join on Windows, through the Windows seam: online with Add-Computer (the password on
// PowerShell's standard input), or offline with djoin /requestODJ and a blob from a pre-staged
// computer account (a machine path, or a url downloaded or copied from a bundle and checked
// against its sha256). Both finish at the next boot, so a join asks the runner for a reboot;
// membership is read from Win32_ComputerSystem (PartOfDomain, Domain, Name) and never changed
// once it names a domain.
import type { Change, CheckResult, ApplyResult, StepContext } from '../engine/step.ts';
import type { DomainJoinSpec } from '../config/schema/index.ts';
import type { ComputerSystem, DomainJoinOutcome, WindowsHost } from '../host/index.ts';
import { tail } from '../host/index.ts';
import { displayUrl } from '../host/http.ts';
import { ConfigError, NotAvailableError, StepDetailsError } from '../errors.ts';
import { fetchVerified } from '../verify/fetch.ts';
import { isLocalSource } from '../config/schema/source.ts';
import { checkLocalSource } from '../bundle/local-source.ts';
import { noSeamSkip, requireSeam, seamOf } from '../windows/steps/seam.ts';
import { readJoinPassword } from './password.ts';
import { describeJoinFailure, joinPlacement, type JoinFailure, type JoinFailureKind } from './adcli.ts';

const FIELD = 'spec.domainJoin';
const BLOB_FIELD = `${FIELD}.windows.offlineBlob`;
const RUN_DIR = 'C:\\ProgramData\\machineadm\\run';
/** A downloaded blob holds the computer account's secret: kept only while djoin reads it. */
export const DOWNLOADED_BLOB = `${RUN_DIR}\\domain-join.odj`;
export const OUTPUT_TAIL_LINES = 30;

// Win32 codes of NetJoinDomain / JoinDomainOrWorkgroup (and the logon errors they pass on), by
// what the operator has to do. [JoinDomainOrWorkgroup method of Win32_ComputerSystem; System
// Error Codes 0-499, 1300-1699, 8200-8999; Network Management Error Codes; KB5020276]
const CODES: Readonly<Record<number, JoinFailureKind>> = {
  86: 'credentials', // ERROR_INVALID_PASSWORD
  1326: 'credentials', // ERROR_LOGON_FAILURE: unknown user name or bad password
  1327: 'credentials', // ERROR_ACCOUNT_RESTRICTION
  1330: 'credentials', // ERROR_PASSWORD_EXPIRED
  1331: 'credentials', // ERROR_ACCOUNT_DISABLED
  1909: 'credentials', // ERROR_ACCOUNT_LOCKED_OUT
  53: 'unreachable', // ERROR_BAD_NETPATH
  1311: 'unreachable', // ERROR_NO_LOGON_SERVERS
  1355: 'unreachable', // ERROR_NO_SUCH_DOMAIN: does not exist or cannot be contacted
  1722: 'unreachable', // RPC_S_SERVER_UNAVAILABLE
  2453: 'unreachable', // NERR_DCNotFound
  2224: 'account-exists', // NERR_UserExists
  2732: 'account-exists', // NERR_AccountReuseBlockedByPolicy (KB5020276)
  5: 'not-permitted', // ERROR_ACCESS_DENIED
  8557: 'not-permitted', // ERROR_DS_MACHINE_ACCOUNT_QUOTA_EXCEEDED
  1398: 'clock-skew', // ERROR_TIME_SKEW
};

export type WindowsJoinMethod = 'Add-Computer' | 'djoin';

/** What a Win32 code of a join or leave means to the operator ('other' when it names nothing known). */
export function windowsCodeKind(code: number | undefined): JoinFailureKind {
  return (code !== undefined ? CODES[code] : undefined) ?? 'other';
}

export function classifyWindowsJoinFailure(outcome: DomainJoinOutcome, dj: DomainJoinSpec, method: WindowsJoinMethod): JoinFailure {
  const kind = windowsCodeKind(outcome.code);
  const username = method === 'Add-Computer' ? dj.credentials?.username : undefined;
  return describeJoinFailure(kind, dj, username, {
    tool: method,
    otherHint: method === 'djoin'
      ? 'read the output tail; a blob is made for one computer by djoin /provision and may be used once'
      : 'read the output tail (the error id and Windows\' message)',
  });
}

function methodOf(dj: DomainJoinSpec): WindowsJoinMethod {
  return dj.windows?.offlineBlob !== undefined ? 'djoin' : 'Add-Computer';
}

function sameDomain(system: ComputerSystem, domain: string): boolean {
  return system.partOfDomain && system.domain.replace(/\.$/, '').toLowerCase() === domain.toLowerCase();
}

/** A membership machineadm will not change: another domain, or this one under another name. */
function mismatch(system: ComputerSystem, dj: DomainJoinSpec): string | undefined {
  if (!system.partOfDomain) return undefined;
  if (!sameDomain(system, dj.domain)) return `this machine is a member of ${system.domain} (Win32_ComputerSystem), not of ${dj.domain}`;
  if (dj.computerName !== undefined && system.name.toUpperCase() !== dj.computerName.toUpperCase()) {
    return `this machine is a member of ${system.domain} as ${system.name}, not as ${dj.computerName}`;
  }
  return undefined;
}

const LEAVE_FIRST = 'machineadm does not move a machine between domains or rename a member: leave the domain first (Remove-Computer, then restart), or correct spec.domainJoin';

function changes(dj: DomainJoinSpec): Change[] {
  const blob = dj.windows?.offlineBlob;
  const how = blob !== undefined
    ? `djoin /requestODJ /localos with the offline blob ${blob.file ?? `${displayUrl(blob.url!)} (sha256 ${blob.sha256})`}; the computer account, name and OU are the blob's`
    : `Add-Computer as ${dj.credentials?.username ?? '(no credentials)'}${dj.domainController !== undefined ? ` through ${dj.domainController}` : ''}, password on standard input`;
  return [
    { action: 'join', target: dj.domain, detail: blob !== undefined ? how : `${joinPlacement(dj)}; ${how}` },
    { action: 'restart', target: 'the machine', detail: 'the join takes effect at the next boot; machineadm resumes after it' },
  ];
}

/** What only a Windows run can find wrong before anything changes (exit 2). */
export async function windowsPreflight(ctx: StepContext, dj: DomainJoinSpec): Promise<void> {
  if (dj.dnsServers !== undefined) {
    throw new NotAvailableError(`${FIELD}.dnsServers: not available in this build of machineadm`, { hint: 'give spec.domainJoin.domainController (the domain controller\'s DNS name), or set the DNS servers in the machine image' });
  }
  const blob = dj.windows?.offlineBlob;
  if (blob?.file !== undefined) {
    if (seamOf(ctx) && !(await ctx.host.fs.exists(blob.file))) throw new ConfigError([{ path: `${BLOB_FIELD}.file`, message: `${blob.file} does not exist`, hint: 'copy the blob djoin /provision wrote to this path first, or give url and sha256' }]);
    return;
  }
  // A blob from a bundle that is not the one the configuration names fails the run (exit 3) here,
  // before anything changes.
  if (blob?.url !== undefined && isLocalSource(blob.url)) await checkLocalSource(ctx.host, { url: blob.url, sha256: blob.sha256! }, BLOB_FIELD);
  if (blob !== undefined) return;
  // Add-Computer -Server takes a domain controller's FQDN since the August 2024 hardening.
  if (dj.domainController !== undefined && /^[0-9.]+$|:/.test(dj.domainController)) {
    throw new ConfigError([{ path: `${FIELD}.domainController`, message: `${dj.domainController} is an address; Add-Computer needs the domain controller's DNS name`, hint: 'give its FQDN, e.g. dc1.corp.example' }]);
  }
  await readJoinPassword(ctx, dj.credentials!);
}

export async function windowsCheck(ctx: StepContext, dj: DomainJoinSpec): Promise<CheckResult> {
  const windows = seamOf(ctx);
  const blob = dj.windows?.offlineBlob;
  const network = blob?.url !== undefined && !isLocalSource(blob.url) ? { network: [`download ${displayUrl(blob.url)} for ${BLOB_FIELD}`] } : {};
  if (windows) {
    const system = await windows.computerSystem();
    const wrong = mismatch(system, dj);
    if (wrong) return { done: false, changes: [{ action: 'refuse', target: dj.domain, detail: `${wrong}: ${LEAVE_FIRST}` }] };
    if (sameDomain(system, dj.domain)) return { done: true, changes: [] };
  }
  const skip = noSeamSkip(ctx);
  return { done: false, changes: changes(dj), ...network, ...(skip ? { skipReason: skip } : {}) };
}

async function joinOffline(ctx: StepContext, windows: WindowsHost, dj: DomainJoinSpec): Promise<DomainJoinOutcome> {
  const blob = dj.windows!.offlineBlob!;
  if (blob.file !== undefined) return windows.joinDomainOffline(blob.file);
  // Into a directory only SYSTEM and Administrators can read, and gone once djoin has read it.
  await windows.createPrivateDirectory(RUN_DIR);
  try {
    await fetchVerified(ctx.host, { urls: [blob.url!], destination: DOWNLOADED_BLOB, sha256: blob.sha256!, mode: 0o600 });
    return await windows.joinDomainOffline(DOWNLOADED_BLOB);
  } finally {
    await ctx.host.fs.remove(DOWNLOADED_BLOB);
  }
}

export async function windowsApply(ctx: StepContext, dj: DomainJoinSpec): Promise<ApplyResult> {
  const windows = requireSeam(ctx);
  const before = await windows.computerSystem();
  const wrong = mismatch(before, dj);
  if (wrong) throw new StepDetailsError(wrong, { domain: dj.domain, memberOf: before.domain, computerName: before.name }, { hint: LEAVE_FIRST });
  const method = methodOf(dj);
  let outcome: DomainJoinOutcome;
  let password = '';
  if (method === 'djoin') {
    outcome = await joinOffline(ctx, windows, dj);
  } else {
    password = await readJoinPassword(ctx, dj.credentials!);
    outcome = await windows.joinDomain({
      domain: dj.domain,
      user: dj.credentials!.username,
      ...(dj.organizationalUnit !== undefined ? { organizationalUnit: dj.organizationalUnit } : {}),
      ...(dj.computerName !== undefined && dj.computerName.toUpperCase() !== before.name.toUpperCase() ? { newName: dj.computerName } : {}),
      ...(dj.domainController !== undefined ? { server: dj.domainController } : {}),
    }, password);
  }
  const output = scrub(outcome.message ?? '', password);
  if (output) for (const line of output.split(/\r?\n/).filter((l) => l.trim())) ctx.output(line);
  if (!outcome.joined) {
    const failure = classifyWindowsJoinFailure(outcome, dj, method);
    const code = outcome.code !== undefined ? `, code ${outcome.code}` : '';
    throw new StepDetailsError(`${failure.message} (${method}${code})`, {
      domain: dj.domain,
      tool: method,
      failure: failure.kind,
      ...(outcome.code !== undefined ? { exitCode: outcome.code } : {}),
      ...(outcome.errorId !== undefined ? { errorId: outcome.errorId } : {}),
      outputTail: tail(output.replace(/\r\n/g, '\n'), OUTPUT_TAIL_LINES),
    }, { hint: failure.hint });
  }
  // An offline join takes the name the blob was made for, which only the directory knows.
  const computerName = dj.computerName ?? (method === 'Add-Computer' ? before.name : undefined);
  return {
    rebootRequired: `joined ${dj.domain} (${method}); Windows finishes the join at the next boot`,
    record: {
      domain: dj.domain,
      method,
      ...(computerName !== undefined ? { computerName } : {}),
      ...(dj.organizationalUnit !== undefined && method === 'Add-Computer' ? { organizationalUnit: dj.organizationalUnit } : {}),
    },
  };
}

function scrub(text: string, password: string): string {
  return password === '' ? text : text.split(password).join('<redacted>');
}
