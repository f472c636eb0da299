// Running init, prepare, provision, report and plan once their options are parsed: facts, machine
// values, the configuration, then the run module (src/phases/run.ts). Loaded only when one runs.
import { resolve } from 'node:path';
import type { Io } from '../io.ts';
import { hostFrom, stateFsFrom } from '../host-options.ts';
import { loadConfig } from '../../config/load.ts';
import { executeRun, planRun } from '../../phases/run.ts';
import { DEFAULT_MAX_REBOOTS } from '../../engine/state.ts';
import { renderPlan } from '../render.ts';
import type { Facts, Host } from '../../host/index.ts';
import { ConfigError, UsageError, ExitCode, MachineadmError, RebootRequiredError } from '../../errors.ts';
import { spinnerFactory } from '../spinner.ts';
import { verbosityOf } from '../options.ts';
import { renderData } from '../data-output.ts';
import { openAppendLog, type AppendLog } from '../../host/console.ts';
import { KNOWN_CLOUD_NAMES, resolveMachineValues } from '../../config/machine-source.ts';
import type { ResolvedMachineValue } from '../../config/machine-values.ts';
import { GIVEN_VALUE_HINT, isGivenValueName, splitGivenValue } from '../../config/machine-names.ts';
import type { InstanceValues } from '../../config/instance-values.ts';
import type { PhaseCommand, PhaseOptions } from './phase-options.ts';

/**
 * The command the next boot runs to resume this one: the same command and options, with paths
 * made absolute (the resume does not start in this directory) and without --force (the resume
 * goes on from where the run stopped; it does not redo what is done).
 */
function resumeCommand(command: string, options: PhaseOptions, io: Io): readonly string[] | undefined {
  const sources = options.config ?? [];
  if (sources.includes('-')) return undefined;
  const local = (source: string) => (/^[a-z][a-z0-9+.-]*:\/\//i.test(source) ? source : resolve(io.cwd, source));
  return [
    ...(io.self ?? ['machineadm']),
    command,
    ...sources.flatMap((c) => ['-c', local(c)]),
    '--root', resolve(io.cwd, options.root),
    ...(options.stateDir ? ['--state-dir', resolve(io.cwd, options.stateDir)] : []),
    ...(options.offline ? ['--offline'] : []),
    ...(options.devices ? ['--devices'] : []),
    ...(options.output !== 'text' ? ['-o', options.output] : []),
    ...(options.verbose ? ['-' + 'v'.repeat(options.verbose)] : []),
    ...(options.logFile ? ['--log-file', resolve(io.cwd, options.logFile)] : []),
    ...(options.quiet ? ['--quiet'] : []),
    ...(options.only?.length ? ['--only', options.only.join(',')] : []),
    ...(options.skip?.length ? ['--skip', options.skip.join(',')] : []),
    ...(options.set ?? []).flatMap((value) => ['--set', value]),
    ...(options.reboot === false ? ['--no-reboot'] : []),
    '--max-reboots', String(options.maxReboots ?? DEFAULT_MAX_REBOOTS),
  ];
}

interface GivenFacts {
  facts: Facts | undefined;
  /** The facts file's "machine" map: the other machine's values for { fromMachine: ... }. */
  machine: InstanceValues;
}

function givenMachineValues(entries: Array<[string, unknown]>, source: string): InstanceValues {
  const out: InstanceValues = {};
  for (const [name, value] of entries) {
    if (!isGivenValueName(name)) throw new UsageError(`${source}: "${name}" is not a machine value`, { hint: GIVEN_VALUE_HINT });
    if (typeof value !== 'string') throw new UsageError(`${source}: "${name}" must be a string`);
    // A misspelled cloud must not read as "no cloud": that would join under the OS hostname.
    if (name === 'cloud' && !KNOWN_CLOUD_NAMES.includes(value)) throw new UsageError(`${source}: cloud "${value}" is not one machineadm knows`, { hint: `one of ${KNOWN_CLOUD_NAMES.join(', ')} (${KNOWN_CLOUD_NAMES.at(-1)}: read no metadata service; the hostname and the DMI product UUID are the machine's values)` });
    out[name] = { value, source };
  }
  return out;
}

async function factsFrom(options: PhaseOptions, io: Io): Promise<GivenFacts> {
  if (!options.facts && !options.os) return { facts: undefined, machine: {} };
  const host = hostFrom(options, io);
  let given: Partial<Facts> & { machine?: unknown } = {};
  if (options.facts) {
    const text = await host.local.readText(new URL(options.facts, `file://${io.cwd}/`).pathname);
    if (text === undefined) throw new UsageError(`--facts ${options.facts}: no such file`);
    try {
      given = JSON.parse(text) as Partial<Facts>;
    } catch {
      throw new UsageError(`--facts ${options.facts}: not valid JSON`, { hint: 'write the facts as printed by "machineadm plan -o json" (its "facts" field)' });
    }
  }
  const detected = options.os === undefined || options.os === (process.platform === 'win32' ? 'windows' : 'linux') ? await host.facts() : undefined;
  const os = options.os ?? given.os ?? detected?.os ?? 'linux';
  const base: Facts = detected ?? { os, arch: 'x64', hostname: 'unknown', privileged: true, liveRoot: true };
  const { machine, ...facts } = given;
  if (machine !== undefined && (typeof machine !== 'object' || machine === null || Array.isArray(machine))) throw new UsageError(`--facts ${options.facts}: "machine" must be a map of names to values`);
  return { facts: { ...base, ...facts, os }, machine: givenMachineValues(Object.entries(machine ?? {}), `--facts ${options.facts} machine`) };
}

function renderMachineValues(values: ResolvedMachineValue[]): string {
  if (values.length === 0) return '';
  return 'values from the machine:\n' + values.map((v) => `  ${v.field} = ${v.value}\n      ${v.reference} from ${v.source}\n`).join('') + '\n';
}

/**
 * The configuration sources: with --bundle, the bundle's config.yaml first, once the bundle as a
 * whole is checked (and its signature, with a public key); before anything is read or changed.
 */
async function configSources(host: Host, options: PhaseOptions, io: Io): Promise<string[]> {
  const given = options.config ?? [];
  const keyGiven = options.bundlePublicKey !== undefined || options.bundlePublicKeyFile !== undefined;
  if (options.bundle === undefined) {
    if (keyGiven) throw new UsageError('--bundle-public-key and --bundle-public-key-file go with --bundle', { hint: 'give the bundle directory: --bundle DIR' });
    // -c DIR/config.yaml of a bundle (the way before --bundle): the bundle is checked as a whole too.
    const files = given.filter((g) => !/^[a-z]+:\/\//.test(g) && g !== '-').map((g) => resolve(io.cwd, g)).filter((g) => /[\\/]config\.yaml$/.test(g));
    if (files.length === 0) return given;
    const { bundleOf, checkBundle } = await import('../../bundle/check.ts');
    for (const file of files) {
      const dir = await bundleOf(host, file);
      if (dir !== undefined) await checkBundle(host, dir);
    }
    return given;
  }
  if (options.bundlePublicKey !== undefined && options.bundlePublicKeyFile !== undefined) throw new UsageError('give the bundle\'s public key either with --bundle-public-key or with --bundle-public-key-file, not both');
  const { parsePublicKey } = await import('../../verify/minisign.ts');
  let publicKey;
  if (options.bundlePublicKey !== undefined) publicKey = parsePublicKey(options.bundlePublicKey, 'given with --bundle-public-key');
  else if (options.bundlePublicKeyFile !== undefined) {
    const path = resolve(io.cwd, options.bundlePublicKeyFile);
    const { readOperatorFile } = await import('../operator-file.ts');
    const data = await readOperatorFile(host, path, '--bundle-public-key-file');
    if (data === undefined) throw new UsageError(`--bundle-public-key-file ${path}: no such file`);
    publicKey = parsePublicKey(data, path);
  }
  const { checkBundle } = await import('../../bundle/check.ts');
  const checked = await checkBundle(host, resolve(io.cwd, options.bundle), publicKey);
  return [checked.config, ...given];
}

/** `detected`: this machine's facts, already being probed (without --facts and --os). */
export async function runPhaseCommand(command: PhaseCommand | 'plan-reset', options: PhaseOptions, io: Io, detected?: Promise<Facts>): Promise<number> {
  const { facts: givenFacts, machine: givenMachine } = await factsFrom(options, io);
  const setValues = givenMachineValues((options.set ?? []).map((s) => splitGivenValue(s) ?? [s, '']), '--set');
  const planning = command === 'plan' || command === 'plan-reset' || options.dryRun === true;
  const resetting = command === 'reset' || command === 'plan-reset';
  if (givenFacts && !planning) {
    throw new UsageError('--facts and --os only go with plan or --dry-run', { hint: 'facts describe another machine; nothing can be applied to it from here' });
  }
  const log = openLog(options, io);
  // Signals are watched from before anything can change until the run has reported.
  const interrupts = planning ? undefined : io.watchInterrupts?.();
  try {
    const hostOptions = (offline: boolean, facts = givenFacts ?? detected) => hostFrom({ ...options, offline, otherMachine: givenFacts !== undefined }, io, { facts, ...(interrupts ? { signal: interrupts.signal } : {}) });
    let host = hostOptions(options.offline ?? false);
    // The machine's facts (probing them runs containerd and kubeadm) are gathered while the
    // configuration loads: every phase command needs both, and the probes mostly wait.
    const facts = host.facts();
    facts.catch(() => undefined);
    const sources = await configSources(host, options, io);
    // reset works from its records: a configuration is needed only for credentials (the domain's).
    const loading = loadConfig(host, sources, { readStdin: (maxBytes) => io.readStdin(maxBytes), cwd: io.cwd, ...(resetting ? { emptyWhenNone: true } : {}) });
    loading.catch(() => undefined);
    // A run needs node:crypto (its id, its temporary files' names), ~4 ms to load: loaded while
    // the configuration is read and the probes run, which the run waits for anyway.
    if (!planning) setImmediate(() => process.getBuiltinModule('node:crypto'));
    // Rights come first: a user without them learns that, whatever else is wrong.
    if (!planning && !givenFacts) refuseWithoutRights(command, await facts);
    const loaded = await loading;
    const { instanceId } = loaded;
    // Before anything changes: a value the machine lacks or gives unfit for its field ends the run
    // here (exit 2); a machine that cannot be read (its metadata service down) too (exit 6).
    // reset reads nothing of the machine: it takes the values of the run it undoes.
    const given = { ...givenMachine, ...setValues };
    // spec.security.offline covers the machine's values too: a metadata service is the network.
    if (loaded.config.spec.security.offline && !options.offline) host = hostOptions(true, await facts);
    const { config, resolved } =
      resetting && !givenFacts
        ? await (await import('./reset-values.ts')).resetMachineValues(host, stateFsFrom(options, io, host), loaded.config, given)
        : await resolveMachineValues(host, loaded.config, { given, otherMachine: givenFacts !== undefined });
    // Before anything changes: a binary that is not the signed release must not touch the machine.
    // A plan of this machine shows it as the run's refusal (exit 3), after the whole plan.
    let unsigned: MachineadmError | undefined;
    if (config.spec.security.requireSignedBinary && !resetting && !givenFacts) {
      // Loaded here: signature checking (tweetnacl, the verifier) is for a run that asks for it.
      const { requireSignedSelf } = await import('./trust-run.ts');
      const verifying = requireSignedSelf(host, config.spec.security.releasePublicKey);
      if (!planning) await verifying;
      else unsigned = await verifying.then(() => undefined, (error: unknown) => { if (error instanceof MachineadmError) return error; throw error; });
    }
    const request = {
      command: command === 'plan' ? 'init' : command === 'plan-reset' ? 'reset' : command,
      config,
      host,
      stateFs: stateFsFrom(options, io, host),
      selection: { only: options.only ?? [], skip: options.skip ?? [] },
      force: options.force ?? false,
      ...(options.keepDomain ? { keepDomain: true } : {}),
      sources,
      ...(instanceId ? { instanceId } : {}),
      ...(loaded.warnings ? { notes: loaded.warnings } : {}),
      ...(resolved.length > 0 ? { machineValues: resolved } : {}),
    } as const;
    if (planning) {
      const planned = await planRun(request, { otherMachine: givenFacts !== undefined });
      const { plan } = planned;
      const refusal = unsigned ?? planned.refusal;
      // The whole plan is shown, also when the run would refuse to start: then the refusal follows,
      // on stderr and in the JSON, and the plan exits with the run's code.
      if (options.validateOnly) {
        if (refusal) throw refusal;
        const changing = plan.phases.flatMap((p) => p.steps).filter((step) => step.status === 'change').length;
        io.stdout(options.output === 'json' ? JSON.stringify({ valid: true, onMachine: true, sources: loaded.sources, issues: [] }, null, 2) + '\n' : `configuration is valid, and this machine would accept it: no step refuses, ${changing} would change it (${loaded.sources.join(', ')})\n`);
        return ExitCode.ok;
      }
      const refused = refusal ? { refused: { message: refusal.message, exitCode: refusal.exitCode, ...(refusal.hint ? { hint: refusal.hint } : {}), ...(refusal instanceof ConfigError ? { issues: refusal.issues } : {}) } } : {};
      // Colours on a terminal only, and never when NO_COLOR is set to anything (no-color.org).
      const color = (io.isTerminal?.('stdout') ?? false) && !io.env.NO_COLOR;
      const text = options.output === 'text' ? renderMachineValues(resolved) + renderPlan(plan, { color }) : await renderData(options.output, { ...plan, machineValues: resolved, ...refused });
      if (!options.quiet) io.stdout(text);
      log?.write(options.output === 'text' && color ? renderMachineValues(resolved) + renderPlan(plan) : text);
      if (refusal) throw refusal;
      return ExitCode.ok;
    }
    const mode = options.output !== 'text' ? options.output : io.interactive && !options.quiet ? 'tty' : 'text';
    if (resetting) {
      // Nothing recorded, nothing to undo: a second reset (the first archived the state directory)
      // changes nothing and writes nothing.
      if (!(await request.stateFs.exists('/'))) {
        io.stderr(`nothing to reset: no state directory at ${request.stateFs.root} (machineadm has not run here, or a reset archived it)\n`);
        return ExitCode.ok;
      }
      const report = await executeRun({ ...request, console: { mode, write: io.stdout } });
      if (report.error) io.stderr(`error: ${report.error.message}\n${report.error.hint ? `hint: ${report.error.hint}\n` : ''}`);
      return report.exitCode;
    }
    const spinner = mode === 'tty' ? await spinnerFactory({ color: !io.env.NO_COLOR }) : undefined;
    // Exit codes above 255 exist on Windows only, and cloudbase-init is a Windows agent.
    if (options.cloudbaseInit && host.fs.platform !== 'windows') throw new UsageError('--cloudbase-init is for Windows machines, where cloudbase-init runs', { hint: 'on Linux, --no-reboot leaves the restart to the caller' });
    const argv = resumeCommand(command, options, io);
    const self = io.self ?? ['machineadm'];
    // The registration runs `machineadm resume`, which reads argv from the state directory: argv
    // may carry a -c URL with credentials (src/engine/resume-record.ts).
    const launcher = { argv: [...self, 'resume', '--state-dir', request.stateFs.root, '--root', resolve(io.cwd, options.root)], selfLength: self.length };
    const resume = {
      launcher,
      argv: argv ?? [],
      maxReboots: options.maxReboots ?? DEFAULT_MAX_REBOOTS,
      reboot: options.reboot !== false,
      ...(options.cloudbaseInit ? { byCloudbaseInit: true } : {}),
      ...(argv ? {} : { unavailable: 'the configuration came from standard input, which the resume after the reboot cannot read again' }),
    };
    const verbosity = verbosityOf(options, io.env);
    const write = options.quiet ? () => undefined : io.stdout;
    const report = await executeRun({ ...request, verbosity, resume, console: { mode, write, verbosity, ...(spinner ? { spinner } : {}), ...(log ? { log: log.write } : {}) } });
    // The summary is output; the error that ended the run goes where every error goes, for scripts
    // that read stderr; once: not again where the summary that names it was shown already.
    const shown = !options.quiet && report.summary?.includes(report.error?.message ?? '\0') && io.sameDestination?.();
    if (report.error && !shown) {
      // A planned reboot is not a failure: one "reboot:" line, as reportError says it.
      const label = report.outcome.error instanceof RebootRequiredError ? 'reboot' : 'error';
      io.stderr(`${label}: ${report.error.message}\n${report.error.hint ? `hint: ${report.error.hint}\n` : ''}`);
    }
    return report.exitCode;
  } catch (error) {
    // What ends the command before a run reports (a refusal, a bad configuration) reaches the log too.
    if (log && error instanceof Error) log.write(`error: ${error.message}\n${error instanceof MachineadmError && error.hint ? `hint: ${error.hint}\n` : ''}`);
    throw error;
  } finally {
    interrupts?.dispose();
    log?.close();
  }
}

function openLog(options: PhaseOptions, io: Io): AppendLog | undefined {
  if (options.logFile === undefined) return undefined;
  const path = resolve(io.cwd, options.logFile);
  try {
    return openAppendLog(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    throw new UsageError(`--log-file ${options.logFile}: cannot open ${path} to append to it (${code || (error as Error).message})`, { hint: 'give a file in a directory that exists and that machineadm may write' });
  }
}

/**
 * A run that changes this machine needs root; without it the first write fails halfway (or the
 * state directory refuses). Said before anything is read or changed, with the two ways out.
 */
function refuseWithoutRights(command: PhaseCommand, facts: Facts): void {
  if (facts.os === 'windows' || facts.privileged || !facts.liveRoot) return;
  throw new UsageError(`machineadm ${command} changes this machine and needs root; it runs as an unprivileged user: nothing was changed`, {
    hint: `run it as root (sudo machineadm ${command} ...), give --root DIR to work on a scratch directory instead of /, or see what it would do with "machineadm plan"`,
  });
}

