// What a run starts as the process starts, before the command's code loads.
import type { ToolVersions } from '../host/facts.ts';
import type { Io } from './io.ts';

/** What the process started before the command's code loaded (see startEarly). */
export interface Early {
  versions?: ToolVersions;
}

/**
 * A phase command probes this machine's tools (containerd --version, kubeadm version): processes
 * starting up, 20-75 ms each, that run on another core while this one loads the command's code.
 * Started here, before commander parses the command line, they are done by the time the facts are
 * needed rather than waited for. Not for a plan of another machine (--facts, --os), which probes nothing.
 */
export function startEarly(args: readonly string[], io: Io, phaseCommands: readonly string[]): Early {
  const command = args[0];
  if (command === undefined || !phaseCommands.includes(command)) return {};
  if (args.some((a) => /^--(facts|os)(=|$)/.test(a) || a === '--help' || a === '-h')) return {};
  const versions: ToolVersions = Promise.all([import('../host/exec.ts'), import('../host/facts.ts')]).then(([{ ProcessRunner }, { probeToolVersions }]) => probeToolVersions(new ProcessRunner(io.env)));
  // A command line commander refuses never asks for them.
  versions.catch(() => undefined);
  return { versions };
}
