// init, prepare, provision, report and plan: the phases through the runner. Only their options
// live here; the runner and every step are loaded when one of them runs (./phase-run.ts).
import type { Command } from 'commander';
import { Option } from 'commander';
import type { Io } from '../io.ts';
import { addCommonOptions, parseIds, type CommonOptions } from '../options.ts';
import { UsageError } from '../../errors.ts';
import { DEFAULT_MAX_REBOOTS } from '../../phases/state.ts';
import { GIVEN_VALUE_NAMES } from '../../config/machine-names.ts';

export const PHASE_COMMANDS = ['init', 'prepare', 'provision', 'report', 'plan'] as const;
export type PhaseCommand = (typeof PHASE_COMMANDS)[number];

export interface PhaseOptions extends CommonOptions {
  only?: string[];
  skip?: string[];
  dryRun?: boolean;
  force?: boolean;
  facts?: string;
  os?: 'linux' | 'windows';
  /** --no-reboot sets it false. */
  reboot?: boolean;
  cloudbaseInit?: boolean;
  maxReboots?: number;
  set: string[];
}

function parseSet(value: string, previous: string[] = []): string[] {
  if (!/^[A-Za-z]+=/.test(value)) throw new UsageError(`--set ${value}: expected NAME=VALUE`, { hint: `NAME is one of ${GIVEN_VALUE_NAMES.join(', ')}` });
  return [...previous, value];
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
  prepare: 'boot commands, kernel modules, sysctls, users, files, time servers, containerd configuration',
  provision: 'domain join (Linux, with adcli), then kubeadm init or join with the commands around it',
  report: 'result file, Cluster API sentinel, events to the configured endpoints',
  plan: 'print every action init would take, in order, and what it would refuse (exit 2); touches nothing',
};

function parseCount(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 100) throw new UsageError(`--max-reboots ${value}: not a whole number from 0 to 100`);
  return n;
}

export function registerPhaseCommands(program: Command, io: Io, setExit: (code: number) => void): void {
  for (const name of PHASE_COMMANDS) {
    const command = addCommonOptions(program.command(name).description(SUMMARIES[name]), io)
      .option('--only <ids>', 'run only these steps (comma-separated slash ids; a parent selects its children)', parseIds)
      .option('--skip <ids>', 'leave out these steps (beats --only)', parseIds)
      .option('--force', 'redo steps that their own records say are done (e.g. a join)')
      .option('--set <name=value>', `a machine value instead of reading it (${GIVEN_VALUE_NAMES.join(', ')}); repeatable`, parseSet);
    if (name !== 'plan') {
      command
        .option('--dry-run', 'print the plan instead of changing anything (same as plan)')
        .option('--no-reboot', 'when a step needs a reboot, register the resume and exit 4 without restarting (the caller restarts)')
        .option('--cloudbase-init', 'run as a cloudbase-init script: when a step needs a reboot, exit 1003 so that cloudbase-init restarts and runs it again (no resume is registered)')
        .option('--max-reboots <n>', 'stop with a failure when one run asks for more reboots than this', parseCount, DEFAULT_MAX_REBOOTS);
    }
    command
      .option('--facts <file>', `plan for the machine these facts (JSON) describe instead of this one${name === 'plan' ? '' : ' (with --dry-run)'}`)
      .addOption(new Option('--os <os>', `plan for this operating system${name === 'plan' ? '' : ' (with --dry-run)'}`).choices(['linux', 'windows']));
    command.addHelpText('after', `\nExample:\n  $ ${EXAMPLES[name]}\n`);
    command.action(async (options: PhaseOptions) => {
      // This machine's facts are probed while the runner loads: the probes are processes starting
      // up (containerd --version), which run on another core. One turn of the event loop lets them
      // start before the runner's code is compiled. (--facts and --os decide later which facts apply.)
      const facts = options.facts === undefined && options.os === undefined ? (await import('../host-options.ts')).hostFrom(options, io).facts() : undefined;
      facts?.catch(() => undefined);
      if (facts) await new Promise((started) => setImmediate(started));
      setExit(await (await import('./phase-run.ts')).runPhaseCommand(name, options, io, facts));
    });
  }
}

