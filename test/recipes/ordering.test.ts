// Ordering and non-interference (contract 10.2, 10.3): where machineadm runs in cloud-init's and
// Ignition's boot, that a machineadm run leaves every file cloud-init and Ignition own as they
// wrote it, and that user data without a MachineConfig makes machineadm do nothing and exit 0.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';
import { RECIPES, machineadm, run, writeScratch } from './readers.ts';

const skip = missingRequirement({ commands: ['cloud-init'] });
const dir = scratchDir('machineadm-ordering-');
const PARTS = join(RECIPES, 'user-data');
const read = (name: string): string => readFileSync(join(PARTS, name), 'utf8');

/** Every file under a directory (relative) with its sha256 and mtime: what "unchanged" means. */
function snapshot(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string, prefix: string): void => {
    for (const e of readdirSync(d).sort()) {
      const p = join(d, e);
      const st = statSync(p);
      if (st.isDirectory()) walk(p, `${prefix}${e}/`);
      else out.set(`${prefix}${e}`, `${createHash('sha256').update(readFileSync(p)).digest('hex')} ${st.mtimeMs} ${(st.mode & 0o777).toString(8)}`);
    }
  };
  walk(root, '');
  return out;
}

function makeMime(name: string, parts: [string, string][]): string {
  const args = ['devel', 'make-mime', '--force', ...parts.flatMap(([file, type]) => ['-a', `${join(PARTS, file)}:${type}`])];
  const r = run('cloud-init', args);
  expect(r.status).toBe(0);
  return writeScratch(dir, name, r.stdout);
}

describe.skipIf(skip)('ordering', () => {
  // Debian's cloud-init configuration, the one the recipes were validated against.
  const cfg = load(readFileSync('/etc/cloud/cloud.cfg', 'utf8')) as Record<string, string[]>;

  it.each([
    ['write-files', 'cloud_init_modules', 'writes the recipes\' files in the init stage'],
    ['runcmd', 'cloud_config_modules', 'turns runcmd into a script in the config stage'],
    ['scripts-user', 'cloud_final_modules', 'runs that script (machineadm) in the final stage, cloud-final'],
  ])('cloud-init\'s module %s is in %s: it %s', (module, stage) => {
    expect(cfg[stage]).toContain(module);
  });

  it('runs the runcmd script after every other final-stage module that configures the machine', () => {
    const final = cfg.cloud_final_modules!;
    for (const earlier of ['package-update-upgrade-install', 'scripts-vendor', 'scripts-per-once', 'scripts-per-boot', 'scripts-per-instance']) {
      expect(final.indexOf(earlier)).toBeLessThan(final.indexOf('scripts-user'));
    }
  });
});

describe.skipIf(skip)('non-interference', () => {
  it.each([
    ['a cloud-config only', [['cloud-config.yaml', 'cloud-config']]],
    ['a cloud-config and a shell script', [['cloud-config.yaml', 'cloud-config'], ['prepare.sh', 'x-shellscript']]],
    ['the recipe\'s parts without the MachineConfig', [['cloud-config.yaml', 'cloud-config'], ['prepare.sh', 'x-shellscript'], ['machineadm-part-handler.py', 'part-handler']]],
  ] as [string, [string, string][]][])('user data with %s: machineadm init says "nothing to do", exits 0 and writes nothing', (_, parts) => {
    const root = join(dir, `empty-${parts.length}`);
    mkdirSync(root);
    const userData = makeMime(`no-machineconfig-${parts.length}.mime`, parts);
    const r = machineadm('init', '--root', root, '-c', userData);
    expect(r.stderr).toContain(`nothing to do: the user data holds no MachineConfig (${userData}); machineadm leaves this machine as it is`);
    expect(r.status).toBe(0);
    expect(readdirSync(root)).toEqual([]);
  });

  it('leaves every file cloud-init and Ignition wrote as it was, and writes none under their directories', () => {
    const root = join(dir, 'booted');
    // The machine as cloud-init (write_files, the part handler, its own state) and Ignition (the
    // unit) leave it before machineadm starts.
    const owned: [string, string][] = [
      ['etc/machineadm/config.yaml', read('machineconfig.yaml')],
      ['etc/machineadm/config.d/user-data-01.yaml', read('machineconfig.yaml').replace('name: worker', 'name: worker-from-user-data')],
      ['var/lib/cloud/instance/user-data.txt', readFileSync(join(RECIPES, 'user-data.mime'), 'utf8')],
      ['var/lib/cloud/data/instance-id', 'i-0123456789abcdef0\n'],
      ['etc/cloud/cloud.cfg.d/90-site.cfg', 'datasource_list: [Ec2]\n'],
      ['run/cloud-init/result.json', '{"v1": {"errors": []}}\n'],
      ['etc/systemd/system/machineadm.service', '[Service]\nType=oneshot\nExecStart=/usr/local/bin/machineadm init\n'],
      ['etc/hostname', 'node-a\n'],
    ];
    for (const [path, content] of owned) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), content, { mode: 0o600 });
    }
    const before = snapshot(root);

    const r = machineadm('init', '--root', root, '--skip', 'provision');
    expect(r.status).toBe(0);

    const after = snapshot(root);
    for (const [path] of owned) expect([path, after.get(path)]).toEqual([path, before.get(path)]);
    const added = [...after.keys()].filter((p) => !before.has(p));
    expect(added.length).toBeGreaterThan(0);
    expect(added.filter((p) => /^(etc\/cloud|var\/lib\/cloud|run\/cloud-init|etc\/machineadm|etc\/systemd|etc\/hostname|usr\/lib\/ignition|etc\/ignition)/.test(p))).toEqual([]);
  });
});
