// The standard-image recipes (docs/recipes/standard-image/): Flatcar through Ignition and a Debian or
// Ubuntu cloud image through cloud-init, from the image as published to a node. Checked with the
// real validators (and a broken copy each, so the checks bite), the copies they embed against the
// repository's, and machineadm's own validation and plan of the MachineConfig they carry.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';
import { RECIPES, REPO, machineadm, run, writeScratch } from './readers.ts';

const skip = missingRequirement({ commands: ['cloud-init', 'ignition-validate'] });
const dir = scratchDir('machineadm-standard-image-');
const HERE = join(RECIPES, 'standard-image');
const loader = readFileSync(join(REPO, 'docs/loaders/machineadm-loader.sh'), 'utf8');
const machineConfig = readFileSync(join(HERE, 'machineconfig.yaml'), 'utf8');
const ignitionText = readFileSync(join(HERE, 'flatcar.ign.json'), 'utf8');
const ignition = JSON.parse(ignitionText) as {
  storage: { files: { path: string; mode: number; contents: { source: string } }[] };
  systemd: { units: { name: string; enabled?: boolean; contents?: string; dropins?: { name: string; contents: string }[] }[] };
};
const cloudConfigText = readFileSync(join(HERE, 'debian-cloud-config.yaml'), 'utf8');
const cloudConfig = load(cloudConfigText) as { packages: string[]; write_files: { path: string; permissions: string; content: string }[]; runcmd: string[][] };

const dataUrl = (url: string) => Buffer.from(/^data:;base64,(.*)$/s.exec(url)![1]!, 'base64').toString('utf8');

describe.skipIf(skip)('docs/recipes/standard-image', () => {
  it('has a Flatcar Ignition config that passes ignition-validate without a warning, and a cloud-config that passes cloud-init schema', () => {
    const ign = run('ignition-validate', [join(HERE, 'flatcar.ign.json')]);
    expect(ign.stdout + ign.stderr).toBe('');
    expect(ign.status).toBe(0);
    const cc = run('cloud-init', ['schema', '--config-file', join(HERE, 'debian-cloud-config.yaml')]);
    expect(cc.stdout).toContain('Valid cloud-config');
    expect(cc.status).toBe(0);
  });

  it('is refused by both validators when broken (so the checks bite)', () => {
    const broken = JSON.parse(ignitionText) as typeof ignition;
    broken.systemd.units[0]!.dropins![0]!.name = 'no-suffix';
    expect(run('ignition-validate', [writeScratch(dir, 'broken.json', JSON.stringify(broken))]).status).not.toBe(0);
    expect(run('cloud-init', ['schema', '--config-file', writeScratch(dir, 'broken.yaml', cloudConfigText.replace('packages: [containerd]', 'packages: containerd'))]).status).not.toBe(0);
  });

  it('both write the stage-0 loader (0700) and the MachineConfig (0600) exactly as in the repository', () => {
    const expected = [
      ['/var/lib/machineadm/loader.sh', '0700', loader],
      ['/etc/machineadm/config.yaml', '0600', machineConfig],
    ];
    expect(ignition.storage.files.map((f) => [f.path, `0${f.mode.toString(8)}`, dataUrl(f.contents.source)])).toEqual(expected);
    expect(cloudConfig.write_files.map((f) => [f.path, f.permissions, f.content])).toEqual(expected);
  });

  it('puts machineadm in /opt/bin on Flatcar (its /usr is read-only) and points Flatcar\'s containerd at the configuration machineadm writes', () => {
    const unit = ignition.systemd.units.find((u) => u.name === 'machineadm.service')!;
    expect(unit.enabled).toBe(true);
    expect(unit.contents).toContain('Environment=MACHINEADM_DEST=/opt/bin/machineadm');
    expect(unit.contents).toContain('ExecStart=/bin/sh /var/lib/machineadm/loader.sh init');
    const containerd = ignition.systemd.units.find((u) => u.name === 'containerd.service')!;
    expect(containerd.dropins?.[0]?.contents).toContain('Environment=CONTAINERD_CONFIG=/etc/containerd/config.toml');
    expect(loader).toContain('MACHINEADM_DEST');
  });

  it('installs containerd from the distribution on Debian and runs the loader last', () => {
    expect(cloudConfig.packages).toEqual(['containerd']);
    expect(cloudConfig.runcmd.at(-1)!.slice(-3)).toEqual(['sh', '/var/lib/machineadm/loader.sh', 'init']);
  });

  it('carries a MachineConfig that installs Kubernetes, which machineadm validates', () => {
    const validated = machineadm('config', 'validate', '-c', join(HERE, 'machineconfig.yaml'));
    expect(validated.stderr).toBe('');
    expect(validated.status).toBe(0);
    const spec = (load(machineConfig) as { spec: { kubernetes: { install: { crictl: unknown; cniPlugins: unknown } } } }).spec;
    expect(spec.kubernetes.install).toMatchObject({ crictl: { version: 'v1.31.1' }, cniPlugins: { version: 'v1.5.1' } });
  });
});
