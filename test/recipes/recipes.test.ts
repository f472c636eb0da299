// The integration recipes in docs/recipes/, checked with the real tools that will read them (cloud-init
// 22.4's schema and user-data parser, make-mime, Ignition's validator) and with machineadm itself, so
// a recipe someone copies is one both sides accept. Each tool is also shown a broken copy, so a
// validator that accepts anything would fail here.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';
import { RECIPES, cloudInitParts as readParts, machineadm, run, writeScratch } from './readers.ts';

const MACHINECONFIG_TYPE = 'text/x-machineadm-config';

const skip = missingRequirement({ commands: ['cloud-init', 'ignition-validate', 'sh'] });
const dir = scratchDir('machineadm-recipes-');

function scratchFile(name: string, content: string | Buffer): string {
  return writeScratch(dir, name, content);
}

function cloudInitParts(file: string) {
  return readParts(file, join(dir, 'cloud'));
}

/** The one MachineConfig every recipe carries, parsed. */
const machineConfigSource = readFileSync(join(RECIPES, 'user-data/machineconfig.yaml'));
const machineConfig = load(machineConfigSource.toString('utf8'));

interface CloudConfig {
  write_files: { path: string; permissions: string; owner?: string; content: string }[];
  runcmd: unknown[];
}

interface Ignition {
  ignition: { version: string };
  storage: { files: { path: string; mode: number; contents: { source: string } }[] };
  systemd: { units: { name: string; enabled: boolean; contents: string }[] };
}

function decodeDataUrl(url: string): Buffer {
  const m = /^data:([^,]*),(.*)$/s.exec(url);
  if (!m) throw new Error(`not a data: URL: ${url.slice(0, 40)}`);
  return m[1]!.endsWith(';base64') ? Buffer.from(m[2]!, 'base64') : Buffer.from(decodeURIComponent(m[2]!), 'utf8');
}

describe.skipIf(skip)('docs/recipes/cloud-config.yaml', () => {
  const file = join(RECIPES, 'cloud-config.yaml');
  const text = readFileSync(file, 'utf8');
  const config = load(text) as CloudConfig;

  it('passes cloud-init schema', () => {
    const r = run('cloud-init', ['schema', '--config-file', file]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('Valid cloud-config');
    expect(r.status).toBe(0);
  });

  it('is refused by cloud-init schema when permissions are a YAML number (so the check bites)', () => {
    const broken = scratchFile('cloud-config-broken.yaml', text.replace("permissions: '0600'", 'permissions: 0600'));
    const r = run('cloud-init', ['schema', '--config-file', broken]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('permissions');
  });

  it('writes the shared MachineConfig to /etc/machineadm/config.yaml, root only', () => {
    const entry = config.write_files.find((f) => f.path === '/etc/machineadm/config.yaml');
    expect(entry).toMatchObject({ permissions: '0600', owner: 'root:root' });
    expect(load(entry!.content)).toEqual(machineConfig);
  });

  it('writes a MachineConfig that machineadm validates', () => {
    const entry = config.write_files.find((f) => f.path === '/etc/machineadm/config.yaml')!;
    const r = machineadm('config', 'validate', '-c', scratchFile('cloud-config-machineconfig.yaml', entry.content));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('runs machineadm init from the image as an argv list', () => {
    expect(config.runcmd).toEqual([['/usr/local/bin/machineadm', 'init']]);
  });

  it('has only the modules it means to use (cloud-init schema passes a misspelled top-level key)', () => {
    expect(Object.keys(config).sort()).toEqual(['runcmd', 'write_files']);
    expect(Object.keys(load(cloudInitParts(join(RECIPES, 'user-data.mime'))[0]!.body) as object).sort()).toEqual(['runcmd', 'ssh_pwauth', 'timezone']);
  });
});

describe.skipIf(skip)('docs/recipes/user-data.mime', () => {
  const file = join(RECIPES, 'user-data.mime');

  it('holds four parts for cloud-init, each keeping its type: cloud-config, a shell script, the part handler and the MachineConfig', () => {
    const parts = cloudInitParts(file);
    expect(parts.map((p) => [p.type, p.filename])).toEqual([
      ['text/cloud-config', 'cloud-config.yaml'],
      ['text/x-shellscript', 'prepare.sh'],
      ['text/part-handler', 'machineadm-part-handler.py'],
      [MACHINECONFIG_TYPE, 'machineconfig.yaml'],
    ]);
    expect(parts[0]!.body).toBe(readFileSync(join(RECIPES, 'user-data/cloud-config.yaml'), 'utf8'));
    expect(parts[1]!.body).toBe(readFileSync(join(RECIPES, 'user-data/prepare.sh'), 'utf8'));
    expect(parts[2]!.body).toBe(readFileSync(join(RECIPES, 'user-data/machineadm-part-handler.py'), 'utf8'));
    expect(parts[3]!.body).toBe(machineConfigSource.toString('utf8'));
  });

  it('has a cloud-config part that passes cloud-init schema and runs a plain machineadm init (the part handler wrote config.d)', () => {
    const part = cloudInitParts(file)[0]!;
    const r = run('cloud-init', ['schema', '--config-file', scratchFile('mime-cloud-config.yaml', part.body)]);
    expect(r.stdout).toContain('Valid cloud-config');
    expect(r.status).toBe(0);
    expect((load(part.body) as CloudConfig).runcmd).toEqual([['/usr/local/bin/machineadm', 'init']]);
  });

  it('has a shell script part that sh parses', () => {
    const part = cloudInitParts(file)[1]!;
    expect(part.body.startsWith('#!/bin/sh\n')).toBe(true);
    expect(run('sh', ['-n', scratchFile('prepare.sh', part.body)]).status).toBe(0);
  });

  it('is what make-user-data.sh makes from the parts with make-mime (boundaries differ, parts do not)', () => {
    const again = join(dir, 'regenerated.mime');
    const r = run('sh', [join(RECIPES, 'make-user-data.sh'), again]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(cloudInitParts(again)).toEqual(cloudInitParts(file));
  });
});

describe.skipIf(skip)('docs/recipes/ignition.json', () => {
  const file = join(RECIPES, 'ignition.json');
  const text = readFileSync(file, 'utf8');
  const config = JSON.parse(text) as Ignition;
  const unit = config.systemd.units.find((u) => u.name === 'machineadm.service');
  const configFile = config.storage.files.find((f) => f.path === '/etc/machineadm/config.yaml');

  it('passes ignition-validate without a warning', () => {
    const r = run('ignition-validate', [file]);
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('is refused by ignition-validate when the file mode is a string (so the check bites)', () => {
    const broken = JSON.parse(text) as { storage: { files: { mode: unknown }[] } };
    broken.storage.files[0]!.mode = '0600';
    const r = run('ignition-validate', [scratchFile('ignition-broken.json', JSON.stringify(broken))]);
    expect(r.status).not.toBe(0);
  });

  it('writes the shared MachineConfig to /etc/machineadm/config.yaml with mode 0600', () => {
    expect(configFile?.mode).toBe(0o600);
    expect(decodeDataUrl(configFile!.contents.source)).toEqual(machineConfigSource);
  });

  it('writes a MachineConfig that machineadm validates', () => {
    const r = machineadm('config', 'validate', '-c', scratchFile('ignition-machineconfig.yaml', decodeDataUrl(configFile!.contents.source)));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it.each([
    ['[Unit]', 'Wants=network-online.target'],
    ['[Unit]', 'After=network-online.target containerd.service'],
    ['[Service]', 'Type=oneshot'],
    ['[Service]', 'RemainAfterExit=yes'],
    ['[Service]', 'ExecStart=/usr/local/bin/machineadm init'],
    ['[Install]', 'WantedBy=multi-user.target'],
  ])('has an enabled machineadm.service whose %s section says %s', (section, line) => {
    expect(unit?.enabled).toBe(true);
    const sections = new Map<string, string[]>();
    let current = '';
    for (const l of unit!.contents.split('\n')) {
      if (/^\[.*\]$/.test(l)) sections.set((current = l), []);
      else if (l.trim() !== '') sections.get(current)?.push(l);
    }
    expect(sections.get(section)).toContain(line);
  });
});
