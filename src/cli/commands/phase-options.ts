// The phase commands' names and options: what the command line gives ./phases.ts (the wiring) and
// ./phase-run.ts (the run), so that neither imports the other's module for it.
import type { CommonOptions, VerbosityOptions } from '../options.ts';

export const PHASE_COMMANDS = ['init', 'prepare', 'provision', 'report', 'plan', 'reset'] as const;
export type PhaseCommand = (typeof PHASE_COMMANDS)[number];

export interface PhaseOptions extends CommonOptions, VerbosityOptions {
  quiet?: boolean;
  only?: string[];
  skip?: string[];
  dryRun?: boolean;
  force?: boolean;
  /** Under --root, change the real block devices spec.storage names too. */
  devices?: boolean;
  facts?: string;
  os?: 'linux' | 'windows';
  /** --no-reboot sets it false. */
  reboot?: boolean;
  cloudbaseInit?: boolean;
  maxReboots?: number;
  /** reset: stay a member of the domain. */
  keepDomain?: boolean;
  set: string[];
  /** config validate --on-machine: the plan's refusals, without the plan. */
  validateOnly?: boolean;
  bundle?: string;
  bundlePublicKey?: string;
  bundlePublicKeyFile?: string;
}
