// init, prepare, provision, report and plan: running the phases, loaded only when one of them runs.
import type { Io } from '../io.ts';
import { hostFrom, stateFsFrom } from '../host-options.ts';
import { loadConfig } from '../../config/load.ts';
import { executeRun, planRun } from '../../phases/run.ts';
import { renderPlan } from '../render.ts';
import type { Facts } from '../../host/index.ts';
import { UsageError, ExitCode } from '../../errors.ts';
import { spinnerFactory } from '../spinner.ts';
import type { PhaseCommand, PhaseOptions } from './phases.ts';
import { requireSignedSelf } from './trust-run.ts';

async function factsFrom(options: PhaseOptions, io: Io): Promise<Facts | undefined> {
  if (!options.facts && !options.os) return undefined;
  const host = hostFrom(options, io);
  let given: Partial<Facts> = {};
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
  return { ...base, ...given, os };
}

export async function runPhaseCommand(command: PhaseCommand, options: PhaseOptions, io: Io): Promise<number> {
  const givenFacts = await factsFrom(options, io);
  const planning = command === 'plan' || options.dryRun === true;
  if (givenFacts && !planning) {
    throw new UsageError('--facts and --os only go with plan or --dry-run', { hint: 'facts describe another machine; nothing can be applied to it from here' });
  }
  // Signals are watched from before anything can change until the run has reported.
  const interrupts = planning ? undefined : io.watchInterrupts?.();
  try {
    const hostOptions = (offline: boolean) => hostFrom({ ...options, offline }, io, givenFacts, interrupts?.signal);
    let host = hostOptions(options.offline);
    const { config, instanceId } = await loadConfig(host, options.config, { readStdin: (maxBytes) => io.readStdin(maxBytes), cwd: io.cwd });
    if (config.spec.security.offline && !options.offline) host = hostOptions(true);
    if (config.spec.security.requireSignedBinary && !planning) {
      // Before anything changes: a binary that is not the signed release must not touch the machine.
      await requireSignedSelf(host, config.spec.security.releasePublicKey);
    }
    const request = {
      command: command === 'plan' ? 'init' : command,
      config,
      host,
      stateFs: stateFsFrom(options, io, host),
      selection: { only: options.only, skip: options.skip },
      force: options.force,
      sources: options.config,
      ...(instanceId ? { instanceId } : {}),
    } as const;
    if (planning) {
      const plan = await planRun(request);
      io.stdout(options.output === 'json' ? JSON.stringify(plan, null, 2) + '\n' : renderPlan(plan));
      return ExitCode.ok;
    }
    const mode = options.output === 'json' ? 'json' : io.interactive ? 'tty' : 'text';
    const spinner = mode === 'tty' ? await spinnerFactory() : undefined;
    const report = await executeRun({ ...request, console: { mode, write: io.stdout, ...(spinner ? { spinner } : {}) } });
    // The summary is output; the error that ended the run goes where every error goes, for scripts that read stderr.
    if (report.error) io.stderr(`error: ${report.error.message}\n${report.error.hint ? `hint: ${report.error.hint}\n` : ''}`);
    return report.exitCode;
  } finally {
    interrupts?.dispose();
  }
}
