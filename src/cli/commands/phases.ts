// init, prepare, provision, report and plan: the phases through the runner.
import type { Command } from 'commander';
import { Option } from 'commander';
import type { Io } from '../io.ts';
import { addCommonOptions, hostFrom, parseIds, stateFsFrom, type CommonOptions } from '../options.ts';
import { loadConfig } from '../../config/load.ts';
import { phasesNamed } from '../../phases/registry.ts';
import { computePlan, runPhases, type RunnerInput } from '../../phases/runner.ts';
import { StateStore } from '../../phases/state.ts';
import { EventBus } from '../../report/events.ts';
import { SecretScrubber } from '../../config/secrets.ts';
import { attachConsole, renderResultSummary } from '../../report/console.ts';
import { machineIdentity, registerConfigSecrets, resolveEndpoints } from '../../report/endpoints.ts';
import { openReporting } from '../../report/session.ts';
import { RESULT_FILE } from '../../report/outcome.ts';
import { selectSteps } from '../../phases/select.ts';
import { renderPlan } from '../render.ts';
import type { PhaseName } from '../../phases/step.ts';
import type { Facts } from '../../host/index.ts';
import { UsageError, ExitCode } from '../../errors.ts';
import { spinnerFactory } from '../spinner.ts';
import { requireSignedSelf } from './trust.ts';

export type PhaseCommand = 'init' | 'prepare' | 'provision' | 'report' | 'plan';

export interface PhaseOptions extends CommonOptions {
  only: string[];
  skip: string[];
  dryRun?: boolean;
  force: boolean;
  facts?: string;
  os?: 'linux' | 'windows';
}

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
  if (givenFacts && command !== 'plan' && !options.dryRun) {
    throw new UsageError('--facts and --os only go with plan or --dry-run', { hint: 'facts describe another machine; nothing can be applied to it from here' });
  }
  let host = hostFrom(options, io, givenFacts);
  const { config } = await loadConfig(host, options.config, { readStdin: (maxBytes) => io.readStdin(maxBytes), cwd: io.cwd });
  if (config.spec.security.offline && !options.offline) host = hostFrom({ ...options, offline: true }, io, givenFacts);
  if (config.spec.security.requireSignedBinary && command !== 'plan' && !options.dryRun) {
    // Before anything changes: a binary that is not the signed release must not touch the machine.
    await requireSignedSelf(host, config.spec.security.releasePublicKey);
  }
  const facts = await host.facts();
  const names: PhaseName[] = command === 'init' || command === 'plan' ? ['prepare', 'provision', 'report'] : [command];
  const secrets = new SecretScrubber();
  const identity = await machineIdentity(config, facts, host);
  const events = new EventBus({ scrub: (value) => secrets.scrubValue(value), identity });
  const input: RunnerInput = {
    command: command === 'plan' ? 'init' : command,
    phases: phasesNamed(names),
    selection: { only: options.only, skip: options.skip },
    config,
    facts,
    host,
    events,
    state: new StateStore(stateFsFrom(options, io, host)),
    force: options.force,
    secrets,
  };
  if (command === 'plan' || options.dryRun) {
    const plan = await computePlan(input);
    io.stdout(options.output === 'json' ? JSON.stringify(plan, null, 2) + '\n' : renderPlan(plan));
    return ExitCode.ok;
  }
  // Everything that can be wrong with the input is found before the machine is touched (exit 2).
  selectSteps(input.phases, input.selection);
  const endpoints = await resolveEndpoints(config, host, secrets);
  await registerConfigSecrets(config, host, secrets);
  // The spool listens first: an event is on disk before the console or a file shows it.
  const reporting = await openReporting({ bus: events, host, stateFs: stateFsFrom(options, io, host), endpoints, deadlineSeconds: config.spec.report.deadlineSeconds });
  const mode = options.output === 'json' ? 'json' : io.interactive ? 'tty' : 'text';
  const detach = attachConsole(events, mode, { write: io.stdout }, mode === 'tty' ? await spinnerFactory() : undefined);
  let finished = false;
  try {
    const outcome = await runPhases(input);
    detach();
    // Said only when delivery is slow, so a dead collector does not look like a hang.
    const note = setTimeout(() => {
      if (mode === 'json') return;
      for (const b of reporting.backlog()) io.stdout(`waiting up to ${config.spec.report.deadlineSeconds}s for ${b.events} event${b.events === 1 ? '' : 's'} to reach ${b.url}\n`);
    }, 1_000);
    const reported = await reporting.finish().finally(() => clearTimeout(note));
    finished = true;
    if (options.output !== 'json' && reported.document) {
      io.stdout(secrets.scrub(renderResultSummary(reported.document, { resultFile: host.fs.mapPath(RESULT_FILE), problems: reported.problems })));
    }
    // The summary is output; the error that ends the run goes where every error goes, for scripts that read stderr.
    if (outcome.error) io.stderr(secrets.scrub(`error: ${outcome.error.message}\n${outcome.error.hint ? `hint: ${outcome.error.hint}\n` : ''}`));
    return outcome.error ? outcome.error.exitCode : ExitCode.ok;
  } finally {
    detach();
    if (!finished) await reporting.finish();
  }
}

const EXAMPLES: Record<PhaseCommand, string> = {
  init: 'machineadm init -c /etc/machineadm/config.yaml\n  $ machineadm init -c examples/quickstart.yaml --root /tmp/scratch --skip provision',
  prepare: 'machineadm prepare -c examples/linux-worker.yaml --only prepare/containerd',
  provision: 'machineadm provision -c /etc/machineadm/config.yaml',
  report: 'machineadm report -c /etc/machineadm/config.yaml   # also delivers events spooled by earlier runs',
  plan: 'machineadm plan -c examples/quickstart.yaml -o json\n  $ machineadm plan -c node.yaml --os windows --facts windows-facts.json',
};

const SUMMARIES: Record<PhaseCommand, string> = {
  init: 'make this machine a node: prepare, provision, report (the main job)',
  prepare: 'kernel modules, sysctls, files, containerd configuration',
  provision: 'domain join, then kubeadm init or join',
  report: 'result file, Cluster API sentinel, events to the configured endpoints',
  plan: 'print every action init would take, in order; touches nothing',
};

export function registerPhaseCommands(program: Command, io: Io, setExit: (code: number) => void): void {
  for (const name of ['init', 'prepare', 'provision', 'report', 'plan'] as const) {
    const command = addCommonOptions(program.command(name).description(SUMMARIES[name]))
      .option('--only <ids>', 'run only these steps (comma-separated slash ids; a parent selects its children)', parseIds, [])
      .option('--skip <ids>', 'leave out these steps (beats --only)', parseIds, [])
      .option('--force', 'redo steps that their own records say are done (e.g. a join)', false);
    if (name === 'plan') {
      command
        .option('--facts <file>', 'plan for the machine these facts (JSON) describe instead of this one')
        .addOption(new Option('--os <os>', 'plan for this operating system').choices(['linux', 'windows']));
    } else {
      command.option('--dry-run', 'print the plan instead of changing anything (same as plan)', false);
    }
    command.addHelpText('after', `\nExample:\n  $ ${EXAMPLES[name]}\n`);
    command.action(async (options: PhaseOptions) => setExit(await runPhaseCommand(name, options, io)));
  }
}

