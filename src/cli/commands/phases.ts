// init, prepare, provision, report and plan: the phases through the runner. Only their options
// live here; the runner and every step are loaded when one of them runs (./phase-run.ts).
import type { Command } from 'commander';
import { Option } from 'commander';
import type { Io } from '../io.ts';
import type { Early } from '../early.ts';
import { addCommonOptions, addVerbosityOptions, parseIds } from '../options.ts';
import { PHASE_COMMANDS, type PhaseCommand, type PhaseOptions } from './phase-options.ts';
import { UsageError } from '../../errors.ts';
import { DEFAULT_MAX_REBOOTS } from '../../engine/state.ts';
import { GIVEN_VALUE_HINT, GIVEN_VALUE_NAMES, splitGivenValue } from '../../config/machine-names.ts';

export function parseSet(value: string, previous: string[] = []): string[] {
  if (!splitGivenValue(value)) throw new UsageError(`--set ${value}: expected NAME=VALUE`, { hint: GIVEN_VALUE_HINT });
  return [...previous, value];
}

const EXAMPLES: Record<PhaseCommand, string> = {
  init: 'machineadm init -c /etc/machineadm/config.yaml\n  $ machineadm init -c examples/quickstart.yaml --root /tmp/scratch --skip provision',
  prepare: 'machineadm prepare -c examples/linux-worker.yaml --only prepare/containerd',
  provision: 'machineadm provision -c /etc/machineadm/config.yaml',
  report: 'machineadm report -c /etc/machineadm/config.yaml   # also delivers events spooled by earlier runs',
  plan: 'machineadm plan -c examples/quickstart.yaml -o json\n  $ machineadm plan -c node.yaml --os windows --facts windows-facts.json\n  $ machineadm plan reset -c /etc/machineadm/config.yaml',
  reset: 'machineadm reset --dry-run -c /etc/machineadm/config.yaml\n  $ machineadm reset -c /etc/machineadm/config.yaml --keep-domain',
};

const SUMMARIES: Record<PhaseCommand, string> = {
  init: 'make this machine a node: prepare, provision, report (the main job)',
  prepare: 'boot commands, kernel modules, sysctls, disks and mounts, users, files, time servers, containerd configuration',
  provision: 'domain join (Linux, with adcli), then kubeadm init or join with the commands around it',
  report: 'result file, Cluster API sentinel, events to the configured endpoints',
  plan: 'print every action init (or reset) would take, in order, and what it would refuse (exit 2); touches nothing',
  reset: "undo what machineadm's runs did on this machine, from its own records, and archive its state directory",
};

function parseCount(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 100) throw new UsageError(`--max-reboots ${value}: not a whole number from 0 to 100`);
  return n;
}

export function registerPhaseCommands(program: Command, io: Io, setExit: (code: number) => void, early: Early = {}): void {
  for (const name of PHASE_COMMANDS) {
    const command = addCommonOptions(program.command(name).description(SUMMARIES[name]), io)
      .option('--only <ids>', 'run only these steps (comma-separated slash ids; a parent selects its children)', parseIds)
      .option('--skip <ids>', 'leave out these steps (beats --only)', parseIds)
      .option('--force', 'redo steps that their own records say are done (e.g. a join)')
      .option('--devices', 'with --root: also partition, format and mount the block devices spec.storage names (mount points under the root)')
      .option('--set <name=value>', `a machine value instead of reading it (${GIVEN_VALUE_NAMES.join(', ')}, or an instance-data key such as ds.meta_data.label); repeatable`, parseSet)
      .option('--bundle <dir>', 'use the air-gapped bundle machineadm bundle wrote: check it as a whole (SHA256SUMS names every file, each with its sum), then read its config.yaml before any -c')
      .option('--bundle-public-key <base64>', "the operator's minisign public key the bundle's SHA256SUMS.minisig must be signed with")
      .option('--bundle-public-key-file <file>', "the operator's minisign public key file the bundle's SHA256SUMS.minisig must be signed with");
    addVerbosityOptions(command);
    if (name === 'init' || name === 'plan') command.option('-q, --quiet', 'print nothing on standard output; errors still go to standard error, and the exit code tells the outcome');
    if (name === 'plan') command.argument('[command]', 'the command to plan: init (the default) or reset');
    if (name === 'reset') {
      command
        .option('--dry-run', 'print the plan instead of changing anything (same as plan reset)')
        .option('--keep-domain', 'stay a member of the domain: the computer account, keytab and krb5.conf are kept');
    } else if (name !== 'plan') {
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
    command.action(async (...args: unknown[]) => {
      // plan takes the command it plans as an argument; commander passes the options after it.
      const planned = name === 'plan' ? (args[0] as string | undefined) : undefined;
      const options = (name === 'plan' ? args[1] : args[0]) as PhaseOptions;
      if (planned !== undefined && planned !== 'init' && planned !== 'reset') throw new UsageError(`plan ${planned}: plan shows init or reset`, { hint: 'machineadm plan (init) or machineadm plan reset; a single phase: --only prepare' });
      // This machine's facts are probed while the runner loads: the probes are processes starting
      // up (containerd --version), which run on another core. One turn of the event loop lets them
      // start before the runner's code is compiled. (--facts and --os decide later which facts apply.)
      const facts = options.facts === undefined && options.os === undefined ? (await import('../host-options.ts')).hostFrom(options, io, early.versions ? { versions: early.versions } : {}).facts() : undefined;
      facts?.catch(() => undefined);
      if (facts) await new Promise((started) => setImmediate(started));
      setExit(await (await import('./phase-run.ts')).runPhaseCommand(planned === 'reset' ? 'plan-reset' : name, options, io, facts));
    });
  }
}

