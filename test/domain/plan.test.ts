// A configuration with spec.domainJoin is never silently ignored: plan shows the join (domain, OU,
// never the password) on both systems, and a Windows run is refused before anything changes.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { preflightRun, type RunnerInput } from '../../src/phases/runner.ts';
import { provisionPhase } from '../../src/phases/registry.ts';
import { StateStore } from '../../src/phases/state.ts';
import { createHost, RootedFileSystem, type Facts } from '../../src/host/index.ts';
import { EventBus } from '../../src/report/events.ts';
import { SecretScrubber } from '../../src/config/secrets.ts';
import { parseWith } from '../../src/config/schema/dsl.ts';
import { machineConfigSchema, type MachineConfig } from '../../src/config/schema/index.ts';
import { ExitCode, NotAvailableError, StepError } from '../../src/errors.ts';

const dir = scratchDir('machineadm-domain-plan-');
const PASSWORD = 'Plan-S3cret-never-shown';
const passwordFile = join(dir, 'pw');
writeFileSync(passwordFile, `${PASSWORD}\n`);

const BODY = {
  apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1',
  kind: 'MachineConfig',
  spec: { domainJoin: { domain: 'corp.example', organizationalUnit: 'OU=Nodes,DC=corp,DC=example', computerName: 'NODE-01', credentials: { username: 'joiner', password: { valueFrom: { file: passwordFile } } } } },
};

function configFile(password: unknown): string {
  const path = join(dir, `c-${typeof password}.json`);
  writeFileSync(path, JSON.stringify({ ...BODY, spec: { domainJoin: { ...BODY.spec.domainJoin, credentials: { username: 'joiner', password } } } }));
  return path;
}

describe('plan with spec.domainJoin', () => {
  it.each([
    ['Linux, password from a file', ['--root', dir], { valueFrom: { file: passwordFile } }, /adcli as joiner/],
    ['Linux, password written in the configuration', ['--root', dir], PASSWORD, /adcli as joiner/],
    ['Windows (--os windows), password from a file', ['--os', 'windows'], { valueFrom: { file: passwordFile } }, /Add-Computer as joiner; not available in this build: a run stops with exit 2/],
  ])('on %s shows the join first in provision, with domain and OU, and never the password', async (_name, flags, password, how) => {
    for (const format of ['text', 'json']) {
      const out = await runCli(['plan', '-c', configFile(password), ...flags, '-o', format]);
      expect(out.code, out.stderr).toBe(0);
      expect(out.stdout + out.stderr).not.toContain(PASSWORD);
      if (format === 'json') {
        const plan = JSON.parse(out.stdout) as { phases: { name: string; steps: { id: string; status: string; changes: { target: string; detail?: string }[] }[] }[] };
        const provision = plan.phases.find((p) => p.name === 'provision')!;
        expect(provision.steps[0]!.id).toBe('provision/domain/join');
        expect(provision.steps[0]!.changes[0]).toMatchObject({ target: 'corp.example' });
        expect(provision.steps[0]!.changes[0]!.detail).toContain('OU=Nodes,DC=corp,DC=example');
        expect(provision.steps[0]!.changes[0]!.detail).toMatch(how);
      }
    }
  });
});

describe('a Windows run with spec.domainJoin', () => {
  it('is refused before any step changes anything, with exit 2 and what to do', async () => {
    const facts: Facts = { os: 'windows', arch: 'x64', hostname: 'win-1', privileged: true, liveRoot: true };
    const config = parseWith(machineConfigSchema, BODY).value as MachineConfig;
    const input: RunnerInput = {
      command: 'provision',
      phases: [provisionPhase],
      selection: {},
      config,
      facts,
      host: createHost({ root: dir, facts }),
      events: new EventBus(),
      state: new StateStore(new RootedFileSystem(join(dir, 'state'))),
      secrets: new SecretScrubber(),
    };
    const error = await preflightRun(input).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(StepError);
    expect((error as StepError).cause).toBeInstanceOf(NotAvailableError);
    expect((error as StepError).exitCode).toBe(ExitCode.usage);
    expect((error as StepError).message).toMatch(/^step provision\/domain\/join failed: spec\.domainJoin: joining a Windows machine to a domain is not available in this build/);
    expect((error as StepError).hint).toMatch(/unattend\.xml or djoin/);
  });
});
