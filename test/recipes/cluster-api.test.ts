// The Cluster API recipe (docs/recipes/cluster-api/): the bootstrap data a bootstrap provider puts in
// a Machine's secret (`value`, with `format: cloud-config` or `format: ignition`), checked with the
// real validators, cloud-init's own init stage, the stage-0 loader it embeds, and machineadm's plan
// for the fleet values Cluster API matches a Node to its Machine by.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';
import { RECIPES, REPO, consumeUserData, machineadm, run, warnings, writeScratch } from './readers.ts';

const skip = missingRequirement({ commands: ['cloud-init', 'ignition-validate', 'sh'] });
const dir = scratchDir('machineadm-capi-');
const CAPI = join(RECIPES, 'cluster-api');
const loader = readFileSync(join(REPO, 'docs/loaders/machineadm-loader.sh'), 'utf8');
const machineConfig = readFileSync(join(CAPI, 'machineconfig.yaml'), 'utf8');

interface WriteFile {
  path: string;
  permissions: string;
  owner: string;
  content: string;
}

const cloudConfigText = readFileSync(join(CAPI, 'cloud-config.yaml'), 'utf8');
const cloudConfig = load(cloudConfigText) as { write_files: WriteFile[]; runcmd: string[][] };
const ignitionText = readFileSync(join(CAPI, 'ignition.json'), 'utf8');
const ignition = JSON.parse(ignitionText) as {
  storage: { files: { path: string; mode: number; contents: { source: string } }[] };
  systemd: { units: { name: string; enabled: boolean; contents: string }[] };
};
const unit = ignition.systemd.units.find((u) => u.name === 'machineadm.service')!;

function dataUrl(url: string): string {
  const m = /^data:;base64,(.*)$/s.exec(url);
  if (!m) throw new Error(`not a base64 data: URL: ${url.slice(0, 40)}`);
  return Buffer.from(m[1]!, 'base64').toString('utf8');
}

/** The environment and argv the loader is started with, from either bootstrap format. */
const launches: [string, Record<string, string>, string[]][] = [
  (() => {
    const [env, ...rest] = cloudConfig.runcmd[0]!;
    expect(env).toBe('env');
    const vars = rest.filter((a) => /^[A-Z_]+=/.test(a));
    return ['cloud-config runcmd', Object.fromEntries(vars.map((v) => v.split(/=(.*)/s).slice(0, 2))), rest.slice(vars.length)] as [string, Record<string, string>, string[]];
  })(),
  (() => {
    const lines = unit.contents.split('\n');
    const vars = lines.filter((l) => l.startsWith('Environment=')).map((l) => l.slice('Environment='.length));
    const exec = lines.find((l) => l.startsWith('ExecStart='))!.slice('ExecStart='.length).split(' ');
    return ['Ignition unit', Object.fromEntries(vars.map((v) => v.split(/=(.*)/s).slice(0, 2))), exec] as [string, Record<string, string>, string[]];
  })(),
];

describe.skipIf(skip)('docs/recipes/cluster-api', () => {
  it('has a cloud-config (format: cloud-config) that passes cloud-init schema', () => {
    const r = run('cloud-init', ['schema', '--config-file', join(CAPI, 'cloud-config.yaml')]);
    expect(r.stdout).toContain('Valid cloud-config');
    expect(r.status).toBe(0);
  });

  it('has an Ignition config (format: ignition) that passes ignition-validate without a warning', () => {
    const r = run('ignition-validate', [join(CAPI, 'ignition.json')]);
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('is refused by both validators when broken (so the checks bite)', () => {
    const cc = writeScratch(dir, 'broken.yaml', cloudConfigText.replace("permissions: '0700'", 'permissions: 0700'));
    expect(run('cloud-init', ['schema', '--config-file', cc]).status).not.toBe(0);
    const ign = JSON.parse(ignitionText) as { systemd: { units: { enabled: unknown }[] } };
    ign.systemd.units[0]!.enabled = 'yes';
    expect(run('ignition-validate', [writeScratch(dir, 'broken.json', JSON.stringify(ign))]).status).not.toBe(0);
  });

  it.each([
    ['as it is', () => join(CAPI, 'cloud-config.yaml')],
    ['after machineadm\'s part handler in multipart user data', () => {
      const r = run('cloud-init', ['devel', 'make-mime', '-a', `${join(RECIPES, 'user-data/machineadm-part-handler.py')}:part-handler`, '-a', `${join(CAPI, 'cloud-config.yaml')}:cloud-config`]);
      expect(r.status).toBe(0);
      return writeScratch(dir, 'capi.mime', r.stdout);
    }],
  ])('has a cloud-config that cloud-init\'s init stage consumes %s with no warning', (name, userData) => {
    const cloud = join(dir, `cloud-${name.length}`);
    const log = consumeUserData(userData(), cloud, join(dir, `root-${name.length}`));
    expect(warnings(log)).toEqual([]);
    expect(load(readFileSync(join(cloud, 'instances/iid-datasource-none/cloud-config.txt'), 'utf8'))).toMatchObject({ runcmd: cloudConfig.runcmd });
  });

  it.each([
    ['cloud-config', () => cloudConfig.write_files.map((f) => [f.path, f.permissions, f.content])],
    ['Ignition', () => ignition.storage.files.map((f) => [f.path, `0${f.mode.toString(8)}`, dataUrl(f.contents.source)])],
  ])('the %s writes the stage-0 loader (0700) and the MachineConfig (0600) exactly as in the repository', (_, files) => {
    expect(files()).toEqual([
      ['/var/lib/machineadm/loader.sh', '0700', loader],
      ['/etc/machineadm/config.yaml', '0600', machineConfig],
    ]);
  });

  it.each(launches)('the %s runs the loader with a base URL, a minisign key and `init`', (_, env, argv) => {
    expect(argv).toEqual([expect.stringMatching(/(^|\/)sh$/), '/var/lib/machineadm/loader.sh', 'init']);
    expect(env.MACHINEADM_BASE_URL).toMatch(/^https:\/\//);
    // What the loader checks before it trusts the key: a minisign ed25519 public key, 42 bytes.
    const key = Buffer.from(env.MACHINEADM_PUBKEY ?? '', 'base64');
    expect([key.length, key.subarray(0, 2).toString('latin1')]).toEqual([42, 'Ed']);
  });

  it('orders the Ignition unit as a oneshot after network-online, enabled at boot', () => {
    expect(unit.enabled).toBe(true);
    for (const line of ['Wants=network-online.target', 'After=network-online.target containerd.service', 'Type=oneshot', 'RemainAfterExit=yes', 'WantedBy=multi-user.target']) {
      expect(unit.contents.split('\n')).toContain(line);
    }
  });

  it('has a MachineConfig that machineadm validates, with the sentinel on and a report endpoint', () => {
    const r = machineadm('config', 'validate', '-c', join(CAPI, 'machineconfig.yaml'));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const spec = (load(machineConfig) as { spec: { report: { clusterAPISentinel: boolean; endpoints: { url: string }[] } } }).spec;
    expect(spec.report.clusterAPISentinel).toBe(true);
    expect(spec.report.endpoints.map((e) => e.url)).toEqual([expect.stringMatching(/^https:\/\//)]);
  });

  it('gives each machine its own node name and provider ID from the fleet values (plan with the machine\'s values)', () => {
    const r = machineadm('plan', '--root', join(dir, 'plan-root'), '-c', join(CAPI, 'machineconfig.yaml'), '-o', 'json',
      '--set', 'localHostname=ip-10-0-1-7.eu-west-1.compute.internal', '--set', 'zone=eu-west-1b', '--set', 'providerID=aws:///eu-west-1b/i-0abc');
    expect(r.status).toBe(0);
    interface Change { target: string; diff?: string }
    const plan = JSON.parse(r.stdout) as { phases: { steps: { id: string; changes: Change[] }[] }[] };
    const joinStep = plan.phases.flatMap((p) => p.steps).find((s) => s.id === 'provision/kubeadm/join')!;
    const diff = (target: string): unknown => load(joinStep.changes.find((c) => c.target === target)?.diff ?? '');
    expect(diff('/run/machineadm/kubeadm-join.yaml')).toMatchObject({
      nodeRegistration: { name: 'ip-10-0-1-7.eu-west-1.compute.internal', kubeletExtraArgs: [{ name: 'node-labels', value: 'topology.kubernetes.io/zone=eu-west-1b' }] },
    });
    expect(diff('/run/machineadm/kubeadm-patches/kubeletconfiguration+merge.yaml')).toMatchObject({ providerID: 'aws:///eu-west-1b/i-0abc' });
  });
});
