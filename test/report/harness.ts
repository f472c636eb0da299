// Runs phases in-process with the reporting wired as the CLI wires it (scrubbed bus with an
// identity, spool and delivery, result files, console), with test steps instead of real ones.
import { join } from 'node:path';
import { createHost, RootedFileSystem, type Facts, type Host } from '../../src/host/index.ts';
import { parseWith } from '../../src/config/schema/dsl.ts';
import { machineConfigSchema, type MachineConfig } from '../../src/config/schema/index.ts';
import { EventBus } from '../../src/report/events.ts';
import { SecretScrubber } from '../../src/config/secrets.ts';
import { attachConsole, renderResultSummary } from '../../src/report/console.ts';
import { machineIdentity, registerConfigSecrets, resolveEndpoints } from '../../src/report/endpoints.ts';
import { openReporting, type ReportingResult } from '../../src/report/session.ts';
import { runPhases, type RunOutcome } from '../../src/phases/runner.ts';
import { StateStore } from '../../src/phases/state.ts';
import { reportPhase } from '../../src/phases/registry.ts';
import type { Phase, Step } from '../../src/phases/step.ts';

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

export async function runWithReporting(options: {
  root: string;
  config: MachineConfig;
  prepare?: Step[];
  provision?: Step[];
  command?: string;
  offline?: boolean;
  /** Called once the sinks are attached, before the run. */
  beforeRun?: () => void;
}): Promise<HarnessRun> {
  const host = createHost({ root: options.root, facts, offline: options.offline ?? false, env: {} });
  const stateFs = new RootedFileSystem(join(options.root, 'var/lib/machineadm'));
  const secrets = new SecretScrubber();
  const endpoints = await resolveEndpoints(options.config, host, secrets);
  await registerConfigSecrets(options.config, host, secrets);
  const bus = new EventBus({ scrub: (v) => secrets.scrubValue(v), identity: await machineIdentity(options.config, facts, host) });
  const reporting = await openReporting({ bus, host, stateFs, endpoints, deadlineSeconds: options.config.spec.report.deadlineSeconds });
  let text = '';
  const detach = attachConsole(bus, 'text', { write: (t) => (text += t) });
  const phases: Phase[] =
    options.command === 'report'
      ? [reportPhase]
      : [{ name: 'prepare', summary: 'test prepare', steps: options.prepare ?? [] }, { name: 'provision', summary: 'test provision', steps: options.provision ?? [] }, reportPhase];
  options.beforeRun?.();
  const outcome = await runPhases({ command: options.command ?? 'init', phases, selection: {}, config: options.config, facts, host, events: bus, state: new StateStore(stateFs), secrets });
  detach();
  const reported = await reporting.finish();
  const summary = reported.document ? secrets.scrub(renderResultSummary(reported.document, { problems: reported.problems })) : '';
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
