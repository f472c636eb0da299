// Runs phases in-process through the run module, as the CLI does (scrubbed bus with an identity,
// spool and delivery, result files, console), with test steps instead of real ones.
import { join } from 'node:path';
import { createHost, RootedFileSystem, type Facts, type Host } from '../../src/host/index.ts';
import { parseWith } from '../../src/config/schema/dsl.ts';
import { machineConfigSchema, type MachineConfig } from '../../src/config/schema/index.ts';
import { renderResultSummary } from '../../src/report/console.ts';
import type { ReportingResult } from '../../src/report/session.ts';
import type { RunOutcome } from '../../src/engine/runner.ts';
import { executeRun } from '../../src/phases/run.ts';
import { reportPhase } from '../../src/phases/registry.ts';
import type { Phase, Step } from '../../src/engine/step.ts';

export const facts: Facts = { os: 'linux', arch: 'x64', hostname: 'test-node', privileged: true, liveRoot: false };

export function configFrom(spec: Record<string, unknown>): MachineConfig {
  const { value, issues } = parseWith(machineConfigSchema, { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec });
  if (!value) throw new Error(`bad test config: ${JSON.stringify(issues)}`);
  return value;
}

export interface HarnessRun {
  outcome: RunOutcome;
  reported: ReportingResult;
  console: string;
  summary: string;
  host: Host;
  stateFs: RootedFileSystem;
}

/** Runs these steps through the run module (src/phases/run.ts), as the CLI would. */
export async function runWithReporting(options: {
  root: string;
  config: MachineConfig;
  prepare?: Step[];
  provision?: Step[];
  command?: 'init' | 'report';
  offline?: boolean;
}): Promise<HarnessRun> {
  const host = createHost({ root: options.root, facts, offline: options.offline ?? false, env: {} });
  const stateFs = new RootedFileSystem(join(options.root, 'var/lib/machineadm'));
  let text = '';
  const phases: Phase[] =
    options.command === 'report'
      ? [reportPhase]
      : [{ name: 'prepare', summary: 'test prepare', steps: options.prepare ?? [] }, { name: 'provision', summary: 'test provision', steps: options.provision ?? [] }, reportPhase];
  const { outcome, reported } = await executeRun({
    command: options.command ?? 'init',
    config: options.config,
    host,
    stateFs,
    selection: {},
    force: false,
    console: { mode: 'text', write: (t) => (text += t) },
    phases,
  });
  // The summary as a run prints it, with the result file at its live path.
  const summary = reported.document ? renderResultSummary(reported.document, { problems: reported.problems }) : '';
  return { outcome, reported, console: text, summary, host, stateFs };
}

export function step(id: string, behaviour: Partial<Step> & { fail?: Error } = {}): Step {
  return {
    id,
    summary: `test step ${id}`,
    check: async () => ({ done: false, changes: [{ action: 'set', target: id }] }),
    apply: async () => {
      if (behaviour.fail) throw behaviour.fail;
      return {};
    },
    ...behaviour,
  };
}
