// A configuration with spec.domainJoin is never silently ignored: plan shows the join (domain, OU,
// never the password) on both systems, and what a Windows run cannot use is refused before anything changes.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { preflightRun, type RunnerInput } from '../../src/engine/runner.ts';
import { provisionPhase } from '../../src/phases/registry.ts';
import { StateStore } from '../../src/engine/state.ts';
import { createHost, RootedFileSystem, type Facts } from '../../src/host/index.ts';
import { EventBus } from '../../src/engine/events.ts';
import { SecretScrubber } from '../../src/config/secrets.ts';
import { parseWith } from '../../src/config/schema/dsl.ts';
import { machineConfigSchema, type MachineConfig } from '../../src/config/schema/index.ts';
import { ConfigError, ExitCode, NotAvailableError, StepError } from '../../src/errors.ts';

const dir = scratchDir('machineadm-domain-plan-');
const PASSWORD = 'Plan-S3cret-never-shown';
// A machine path under --root (the plan reads the password file as the run would).
const passwordFile = '/pw';
writeFileSync(join(dir, 'pw'), `${PASSWORD}\n`);

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
    ['Windows (--os windows), password from a file', ['--os', 'windows'], { valueFrom: { file: passwordFile } }, /Add-Computer as joiner, password on standard input/],
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
  function input(domainJoin: Record<string, unknown>): RunnerInput {
    const facts: Facts = { os: 'windows', arch: 'x64', hostname: 'win-1', privileged: true, liveRoot: true };
    const config = parseWith(machineConfigSchema, { ...BODY, spec: { domainJoin: { ...BODY.spec.domainJoin, ...domainJoin } } }).value as MachineConfig;
    return { command: 'provision', phases: [provisionPhase], selection: {}, config, facts, host: createHost({ facts, root: dir }), events: new EventBus(), state: new StateStore(new RootedFileSystem(join(dir, 'state'))), secrets: new SecretScrubber() };
  }

  it('reads the password before any step changes anything', async () => {
    await expect(preflightRun(input({}))).resolves.toBeUndefined();
    const missing = input({ credentials: { username: 'joiner', password: { valueFrom: { file: join(dir, 'absent') } } } });
    await expect(preflightRun(missing)).rejects.toMatchObject({ exitCode: ExitCode.usage, message: expect.stringMatching(/spec\.domainJoin\.credentials\.password/) });
  });

  it.each([
    ['dnsServers', { dnsServers: ['10.0.0.2'] }, NotAvailableError, /spec\.domainJoin\.dnsServers: not available in this build/],
    ['a domain controller given by address', { domainController: '10.0.0.2' }, ConfigError, /Add-Computer needs the domain controller's DNS name/],
  ])('refuses %s before any step changes anything, with exit 2', async (_name, extra, type, message) => {
    const error = (await preflightRun(input(extra)).then(() => undefined, (e: unknown) => e)) as StepError | ConfigError;
    // A configuration error is reported as it is; other refusals name the step.
    expect(error instanceof StepError ? error.cause : error).toBeInstanceOf(type);
    expect(error.exitCode).toBe(ExitCode.usage);
    expect(error.message).toMatch(message);
  });
});
