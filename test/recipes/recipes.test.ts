// The integration recipes in docs/recipes/, checked with the real tools that will read them (cloud-init
// 22.4's schema and user-data parser, make-mime, Ignition's validator) and with machineadm itself, so
// a recipe someone copies is one both sides accept. Each tool is also shown a broken copy, so a
// validator that accepts anything would fail here.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';

const REPO = resolve(import.meta.dirname, '../..');
const RECIPES = join(REPO, 'docs/recipes');
const NODE = process.execPath;
const MACHINECONFIG_TYPE = 'application/machineadm.cluster.x-k8s.io';
// cloud-init's own interpreter: a python3 earlier on PATH (pyenv, venv) does not have its modules.
const CLOUD_INIT_PYTHON = '/usr/bin/python3';

const skip = missingRequirement({ commands: ['cloud-init', 'ignition-validate', 'sh'] });
const dir = scratchDir('machineadm-recipes-');

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[]): Run {
  const r = spawnSync(command, args, { cwd: REPO, encoding: 'utf8', env: { ...process.env, PATH: `${dirname(NODE)}:${process.env.PATH ?? ''}` } });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function machineadm(...args: string[]): Run {
  return run(NODE, ['bin/machineadm.js', ...args]);
}

function scratchFile(name: string, content: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

/** The one MachineConfig every recipe carries, parsed. */
const machineConfigSource = readFileSync(join(RECIPES, 'user-data/machineconfig.yaml'));
const machineConfig = load(machineConfigSource.toString('utf8'));

interface CloudConfig {
  write_files: { path: string; permissions: string; owner?: string; content: string }[];
  runcmd: unknown[];
}

interface MimePart {
  type: string;
  filename: string | null;
  body: string;
}

// Reads user data the way cloud-init does at boot (its UserDataProcessor, with includes and
// nesting resolved) and lists the leaf parts it would hand to its handlers.
const READ_USER_DATA = `
import base64, json, sys
from cloudinit import helpers
from cloudinit.user_data import UserDataProcessor
paths = helpers.Paths({"cloud_dir": sys.argv[2]})
message = UserDataProcessor(paths).process(open(sys.argv[1], "rb").read())
parts = [{"type": p.get_content_type(), "filename": p.get_filename(),
          "body": base64.b64encode(p.get_payload(decode=True)).decode()}
         for p in message.walk() if not p.is_multipart()]
print(json.dumps(parts))
`;

function cloudInitParts(file: string): MimePart[] {
  const out = execFileSync(CLOUD_INIT_PYTHON, ['-c', READ_USER_DATA, file, join(dir, 'cloud')], { encoding: 'utf8' });
  return (JSON.parse(out) as MimePart[]).map((p) => ({ ...p, body: Buffer.from(p.body, 'base64').toString('utf8') }));
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

  it('holds three parts for cloud-init: cloud-config, a shell script and the MachineConfig', () => {
    const parts = cloudInitParts(file);
    expect(parts.map((p) => [p.type, p.filename])).toEqual([
      ['text/cloud-config', 'cloud-config.yaml'],
      ['text/x-shellscript', 'prepare.sh'],
      // make-mime writes text/application/machineadm.cluster.x-k8s.io, which cloud-init's parser
      // reads as plain text it has no handler for; machineadm reads it as its own (contract 3.3).
      ['text/plain', 'machineconfig.yaml'],
    ]);
    expect(readFileSync(file, 'utf8')).toContain(`Content-Type: text/${MACHINECONFIG_TYPE};`);
    expect(parts[0]!.body).toBe(readFileSync(join(RECIPES, 'user-data/cloud-config.yaml'), 'utf8'));
    expect(parts[1]!.body).toBe(readFileSync(join(RECIPES, 'user-data/prepare.sh'), 'utf8'));
    expect(parts[2]!.body).toBe(machineConfigSource.toString('utf8'));
  });

  it('has a cloud-config part that passes cloud-init schema and runs machineadm on the stored user data', () => {
    const part = cloudInitParts(file)[0]!;
    const r = run('cloud-init', ['schema', '--config-file', scratchFile('mime-cloud-config.yaml', part.body)]);
    expect(r.stdout).toContain('Valid cloud-config');
    expect(r.status).toBe(0);
    expect((load(part.body) as CloudConfig).runcmd).toEqual([['/usr/local/bin/machineadm', 'init', '-c', '/var/lib/cloud/instance/user-data.txt']]);
  });

  it('has a shell script part that sh parses', () => {
    const part = cloudInitParts(file)[1]!;
    expect(part.body.startsWith('#!/bin/sh\n')).toBe(true);
    expect(run('sh', ['-n', scratchFile('prepare.sh', part.body)]).status).toBe(0);
  });

  it('gives machineadm its part: config view prints the MachineConfig settings', () => {
    const r = machineadm('config', 'view', '-o', 'json', '-c', file);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const view = JSON.parse(r.stdout) as { spec: { kubernetes: Record<string, unknown>; containerd: unknown; sysctls: unknown } };
    const spec = (machineConfig as { spec: { kubernetes: Record<string, unknown>; containerd: unknown; sysctls: unknown } }).spec;
    expect(view.spec.kubernetes).toMatchObject({ role: 'worker', bootstrap: 'join', controlPlaneEndpoint: spec.kubernetes.controlPlaneEndpoint, token: '<redacted>' });
    expect(view.spec.containerd).toEqual(spec.containerd);
    expect(view.spec.sysctls).toEqual(spec.sysctls);
    expect(r.stdout).not.toContain(String(spec.kubernetes.token));
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
