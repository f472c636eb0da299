// init, prepare, provision, report and plan: the phases through the runner. Only their options
// live here; the runner and every step are loaded when one of them runs.
import type { Command } from 'commander';
import { Option } from 'commander';
import type { Io } from '../io.ts';
import { addCommonOptions, parseIds, type CommonOptions } from '../options.ts';

export type PhaseCommand = 'init' | 'prepare' | 'provision' | 'report' | 'plan';

export interface PhaseOptions extends CommonOptions {
  only: string[];
  skip: string[];
  dryRun?: boolean;
  force: boolean;
  facts?: string;
  os?: 'linux' | 'windows';
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
    command.action(async (options: PhaseOptions) => setExit(await (await import('./phase-run.ts')).runPhaseCommand(name, options, io)));
  }
}

