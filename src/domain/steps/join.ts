// The domain/join step, first of the provision phase (the kubelet's identity and gMSA depend on
// the membership). Linux joins with adcli: the password on standard input only, the keytab 0600 at
// spec.domainJoin.linux.keytab, a minimal /etc/krb5.conf only where none exists. Windows joins
// through the Windows seam (../windows-join.ts) and asks for a reboot; plan shows the step on both.
import type { Step, StepContext, CheckResult, Change, ApplyResult } from '../../engine/step.ts';
import type { DomainJoinSpec, MachineConfig } from '../../config/schema/index.ts';
import { CommandError, ConfigError, NotAvailableError, StepDetailsError } from '../../errors.ts';
import { tail } from '../../host/index.ts';
import { adcliJoinArgv, adcliTestjoinArgv, classifyJoinFailure, joinPlacement, realmOf } from '../adcli.ts';
import { keytabPrincipals, machineAccount } from '../keytab.ts';
import { KRB5_CONF, renderKrb5Conf } from '../krb5-conf.ts';
import { passwordEnvNames, readJoinPassword } from '../password.ts';
import { domainLeave } from '../leave.ts';
import { DOWNLOADED_BLOB, windowsApply, windowsCheck, windowsPreflight } from '../windows-join.ts';

const FIELD = 'spec.domainJoin';
export const OUTPUT_TAIL_LINES = 30;
const JOIN_TIMEOUT_MS = 5 * 60_000;
const TESTJOIN_TIMEOUT_MS = 60_000;

function domainJoinOf(config: MachineConfig): DomainJoinSpec {
  return config.spec.domainJoin!;
}

/** Why this build cannot run the Linux join on this machine, if it cannot. */
function notAvailable(dj: DomainJoinSpec): NotAvailableError | undefined {
  if (dj.linux.tool === 'realm') {
    return new NotAvailableError(`${FIELD}.linux.tool: realm is not available in this build of machineadm`, { hint: 'use tool: adcli (the default)' });
  }
  if (dj.dnsServers !== undefined) {
    return new NotAvailableError(`${FIELD}.dnsServers: not available for Linux in this build of machineadm`, { hint: 'give spec.domainJoin.domainController instead' });
  }
  return undefined;
}

// A NetBIOS name, which is what the directory keeps of the computer name, has at most 15 characters.
const NETBIOS_MAX = 15;

/**
 * Without computerName adcli names the account after the host name's first label and cuts it to
 * 15 characters without failing: machines whose names share those characters would take over each
 * other's account, so the name has to be given instead.
 */
function unnamedTooLong(dj: DomainJoinSpec, hostname: string): ConfigError | undefined {
  const label = hostname.split('.')[0] ?? '';
  if (dj.computerName !== undefined || label.length <= NETBIOS_MAX) return undefined;
  return new ConfigError([{
    path: `${FIELD}.computerName`,
    message: `is not given, and this machine's host name ${label} is longer than ${NETBIOS_MAX} characters: adcli would cut the computer account name to ${label.slice(0, NETBIOS_MAX).toUpperCase()}, which other machines may share`,
    hint: `give a computerName of at most ${NETBIOS_MAX} letters, digits and "-" that is unique in ${dj.domain}`,
  }]);
}

async function readPassword(ctx: StepContext, dj: DomainJoinSpec): Promise<string> {
  if (dj.credentials === undefined) {
    throw new ConfigError([{ path: `${FIELD}.credentials`, message: 'is required to join a Linux machine', hint: 'windows.offlineBlob joins Windows machines only; give an account allowed to join computers to the OU' }]);
  }
  return readJoinPassword(ctx, dj.credentials);
}

/** The machine account the keytab holds; undefined when there is no keytab or no such entry. */
async function currentAccount(ctx: StepContext, keytab: string): Promise<{ computerName: string; realm: string } | undefined> {
  const bytes = await ctx.host.fs.readFile(keytab);
  if (bytes === undefined) return undefined;
  const principals = keytabPrincipals(bytes);
  if (principals === undefined) {
    throw new StepDetailsError(`${keytab} is not a Kerberos keytab`, { keytab }, { hint: `move it away or set ${FIELD}.linux.keytab to another path` });
  }
  return machineAccount(principals);
}

/** A keytab that names another domain or computer: machineadm never moves a joined machine. */
function mismatch(dj: DomainJoinSpec, account: { computerName: string; realm: string }): string | undefined {
  if (account.realm !== realmOf(dj.domain)) return `this machine is joined to ${account.realm} as ${account.computerName} (${dj.linux.keytab}), not to ${realmOf(dj.domain)}`;
  if (dj.computerName !== undefined && account.computerName.toUpperCase() !== dj.computerName.toUpperCase()) {
    return `this machine is joined to ${account.realm} as ${account.computerName} (${dj.linux.keytab}), not as ${dj.computerName}`;
  }
  return undefined;
}

/**
 * adcli creates the computer account and sets its password before it writes the keytab, and does
 * not make the keytab's folder: without one the directory keeps an account no machine can use.
 */
async function requireKeytabFolder(ctx: StepContext, keytab: string): Promise<void> {
  const folder = keytab.slice(0, keytab.lastIndexOf('/')) || '/';
  if (await ctx.host.fs.isFolderFollowingLinks(folder)) return;
  throw new StepDetailsError(`${FIELD}.linux.keytab: the folder ${folder} does not exist`, { keytab }, { hint: `create ${folder} before the provision phase (adcli does not), or give a keytab path in an existing folder; nothing was changed in ${ctx.config.spec.domainJoin!.domain}` });
}

const LEAVE_FIRST = 'machineadm does not move a machine between domains or accounts: leave the domain first (adcli delete-computer, then remove the keytab), or correct spec.domainJoin';

function linuxChanges(dj: DomainJoinSpec, krb5Exists: boolean): Change[] {
  const changes: Change[] = [
    { action: 'join', target: dj.domain, detail: `${joinPlacement(dj)}; adcli as ${dj.credentials?.username ?? '(no credentials)'}, password on standard input` },
    { action: 'write', target: dj.linux.keytab, detail: 'the machine account keytab (adcli), mode 0600' },
  ];
  if (!krb5Exists) changes.push({ action: 'create', target: KRB5_CONF, detail: `default realm ${realmOf(dj.domain)} (only because none exists)` });
  return changes;
}

function scrub(line: string, password: string): string {
  return password === '' ? line : line.split(password).join('<redacted>');
}

export const domainJoinStep: Step = {
  id: 'domain/join',
  summary: 'join the Active Directory domain',
  applies: (config) => config.spec.domainJoin !== undefined,
  // Which domain, how and as which computer: in step.finished and result.json (domainJoin).
  reportsRecordAs: 'domainJoin',

  // A downloaded offline blob holds the computer account's secret.
  leftovers: (facts) => (facts.os === 'windows' ? [DOWNLOADED_BLOB] : []),

  // A password file that is missing or empty, a field this build cannot use: found before anything changes.
  async preflight(ctx) {
    const dj = domainJoinOf(ctx.config);
    if (ctx.facts.os === 'windows') return windowsPreflight(ctx, dj);
    const refused = notAvailable(dj) ?? unnamedTooLong(dj, ctx.facts.hostname);
    if (refused) throw refused;
    await readPassword(ctx, dj);
  },

  async check(ctx): Promise<CheckResult> {
    const dj = domainJoinOf(ctx.config);
    if (ctx.facts.os === 'windows') return windowsCheck(ctx, dj);
    // A plan for another machine (--os, --facts) cannot look at its files.
    if (ctx.host.fs.platform !== ctx.facts.os) return { done: false, changes: linuxChanges(dj, false) };
    const account = await currentAccount(ctx, dj.linux.keytab);
    const wrong = account && mismatch(dj, account);
    if (wrong) return { done: false, changes: [{ action: 'refuse', target: dj.linux.keytab, detail: `${wrong}: ${LEAVE_FIRST}` }] };
    const changes = linuxChanges(dj, await ctx.host.fs.exists(KRB5_CONF));
    if (!ctx.facts.liveRoot) {
      return { done: false, changes, skipReason: `the domain join changes the directory and the live machine: not run under --root ${ctx.host.fs.root} (run it with --root /)` };
    }
    if (account && (await ctx.host.proc.which('adcli'))) {
      const test = await ctx.host.proc.run(adcliTestjoinArgv(dj), { timeoutMs: TESTJOIN_TIMEOUT_MS, allowFailure: true, withoutEnv: passwordEnvNames(dj.credentials) }).catch(() => undefined);
      if (test?.exitCode === 0) return { done: true, changes: [] };
      // The keytab names this domain but no longer works (account reset or deleted): join again.
      changes[0] = { ...changes[0]!, detail: `${changes[0]!.detail}; ${dj.linux.keytab} holds ${account.computerName}$ but adcli testjoin fails` };
    }
    return { done: false, changes };
  },

  undo: domainLeave,

  // The boots a Windows join was tried in: Windows counts the machine a member only after the
  // restart, so reset tells a join still waiting for it by the boot (not in the report's record).
  async undoRecord(ctx) {
    return ctx.facts.os === 'windows' && ctx.facts.bootId ? { joinBoots: { [ctx.facts.bootId]: true } } : undefined;
  },

  async apply(ctx): Promise<ApplyResult> {
    const dj = domainJoinOf(ctx.config);
    if (ctx.facts.os === 'windows') return windowsApply(ctx, dj);
    const refused = notAvailable(dj);
    if (refused) throw refused;
    const { fs, proc } = ctx.host;
    const before = await currentAccount(ctx, dj.linux.keytab);
    const wrong = before && mismatch(dj, before);
    if (wrong) throw new StepDetailsError(wrong, { domain: dj.domain, keytab: dj.linux.keytab }, { hint: LEAVE_FIRST });
    if (!(await proc.which('adcli'))) {
      throw new StepDetailsError('adcli is not installed (not found on PATH)', {}, { hint: 'install adcli (Debian and Ubuntu: apt-get install adcli; RHEL: dnf install adcli) before the provision phase' });
    }
    await requireKeytabFolder(ctx, dj.linux.keytab);
    const password = await readPassword(ctx, dj);
    const username = dj.credentials!.username;
    const keytabExisted = before !== undefined || (await fs.exists(dj.linux.keytab));
    // adcli writes the keytab: what was there is recorded and kept first, for reset to give back.
    await fs.keepOriginal(dj.linux.keytab);
    const lines: string[] = [];
    let exitCode: number | undefined;
    try {
      const result = await proc.run(adcliJoinArgv(dj, username), {
        input: password,
        withoutEnv: passwordEnvNames(dj.credentials),
        timeoutMs: JOIN_TIMEOUT_MS,
        allowFailure: true,
        onLine: (line) => {
          const clean = scrub(line, password);
          lines.push(clean);
          ctx.output(clean);
        },
      });
      exitCode = result.exitCode;
    } catch (error) {
      if (!(error instanceof CommandError)) throw error;
      exitCode = error.commandExitCode;
      lines.push(error.timedOut ? `(adcli did not finish in ${JOIN_TIMEOUT_MS / 1000}s)` : '(adcli was stopped)');
    }
    if (exitCode !== 0) {
      // Nothing half-written: a keytab this run created goes; krb5.conf is written only after a join.
      if (!keytabExisted) await fs.remove(dj.linux.keytab);
      const outputTail = tail(lines.join('\n'), OUTPUT_TAIL_LINES);
      const failure = classifyJoinFailure(outputTail, dj, username);
      throw new StepDetailsError(`${failure.message} (adcli join, exit code ${exitCode ?? 'none'})`, {
        domain: dj.domain,
        tool: 'adcli',
        failure: failure.kind,
        ...(exitCode !== undefined ? { exitCode } : {}),
        outputTail,
      }, { hint: failure.hint });
    }
    await fs.setAttributes(dj.linux.keytab, { mode: 0o600 });
    await fs.noteWritten(dj.linux.keytab);
    const joined = await currentAccount(ctx, dj.linux.keytab);
    if (joined === undefined) {
      throw new StepDetailsError(`adcli join exited 0 but ${dj.linux.keytab} holds no machine account`, { domain: dj.domain, outputTail: tail(lines.join('\n'), OUTPUT_TAIL_LINES) }, { hint: 'read the output tail; check that nothing else writes the keytab' });
    }
    const wroteKrb5 = !(await fs.exists(KRB5_CONF));
    if (wroteKrb5) await fs.writeFile(KRB5_CONF, renderKrb5Conf(dj), { mode: 0o644 });
    return {
      record: {
        domain: dj.domain,
        method: 'adcli',
        realm: joined.realm,
        computerName: joined.computerName,
        ...(dj.organizationalUnit !== undefined ? { organizationalUnit: dj.organizationalUnit } : {}),
        keytab: dj.linux.keytab,
        krb5Conf: wroteKrb5 ? 'written' : 'kept',
      },
    };
  },
};
