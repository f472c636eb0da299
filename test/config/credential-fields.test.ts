// Fields that carry credentials without being secret fields: endpoint headers such as
// Authorization and X-API-Key, and mirror URLs with a user, password or token.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { renderContainerdFiles } from '../../src/containerd/files.ts';

const HEADER = { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig' };

describe('endpoint headers', () => {
  it.each(['json', 'text'])('that carry credentials are redacted by config view -o %s; the others are shown', async (format) => {
    const dir = scratchDir();
    const config = join(dir, 'c.json');
    const headers = { Authorization: 'Bearer hdr-auth-5c1e9a', 'X-API-Key': 'hdr-key-77d20b', 'X-Auth-Token': 'hdr-tok-0e4f', 'X-Cluster': 'cluster-east-1' };
    writeFileSync(config, JSON.stringify({ ...HEADER, spec: { report: { endpoints: [{ url: 'https://collector.example/events', headers }] } } }));
    const out = await runCli(['config', 'view', '-c', config, '--root', dir, '-o', format]);
    expect(out.code, out.stderr).toBe(0);
    for (const secret of ['hdr-auth-5c1e9a', 'hdr-key-77d20b', 'hdr-tok-0e4f']) expect(out.stdout).not.toContain(secret);
    expect(out.stdout).toContain('cluster-east-1');
    if (format === 'json') expect(JSON.parse(out.stdout).spec.report.endpoints[0].headers).toEqual({ Authorization: '<redacted>', 'X-API-Key': '<redacted>', 'X-Auth-Token': '<redacted>', 'X-Cluster': 'cluster-east-1' });
  });
});

describe('a registry login in spec.containerd.extraConfig', () => {
  const extraConfig = [
    '[plugins."io.containerd.grpc.v1.cri"]',
    '  enable_unprivileged_ports = true',
    '[plugins."io.containerd.grpc.v1.cri".registry.configs."registry.example".auth]',
    '  username = "robot"',
    '  password = "reg-pw-3f9a1c"',
    "  identitytoken = 'reg-idtok-88b2'",
    '[plugins."io.containerd.grpc.v1.cri".registry.configs."other.example"]',
    '  auth = { username = "bot2", password = "reg-pw-inline-51d0", auth = "cm9ib3Q6cHc=" }',
    '',
  ].join('\n');

  it.each(['text', 'json', 'yaml'])('is redacted by config view -o %s; the rest of extraConfig is shown', async (format) => {
    const dir = scratchDir();
    const config = join(dir, 'c.json');
    writeFileSync(config, JSON.stringify({ ...HEADER, spec: { containerd: { extraConfig } } }));
    const out = await runCli(['config', 'view', '-c', config, '--root', dir, '-o', format]);
    expect(out.code, out.stderr).toBe(0);
    for (const secret of ['reg-pw-3f9a1c', 'reg-idtok-88b2', 'reg-pw-inline-51d0', 'cm9ib3Q6cHc=']) expect(out.stdout).not.toContain(secret);
    for (const shown of ['enable_unprivileged_ports = true', 'username = \\\\?"robot', 'configs.\\\\?"other.example']) expect(out.stdout).toMatch(new RegExp(shown));
  });

  it('written with an escape, hides the whole extraConfig rather than show the login', async () => {
    const dir = scratchDir();
    const config = join(dir, 'c.json');
    const escaped = '[plugins."io.containerd.grpc.v1.cri".registry.configs."registry.example".auth]\n  password = "esc\\u0061ped-pw-9a"\n';
    writeFileSync(config, JSON.stringify({ ...HEADER, spec: { containerd: { extraConfig: escaped } } }));
    const out = await runCli(['config', 'view', '-c', config, '--root', dir, '-o', 'json']);
    expect(out.code, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout).spec.containerd.extraConfig).toBe('<redacted>');
  });
});

describe("a mirror's hosts.toml", () => {
  // The renderer itself, past the configuration's check (which refuses a login or query in a mirror URL).
  const render = (url: string) => renderContainerdFiles({ registries: { 'docker.io': { mirrors: [{ url }] } } }, { containerdVersion: '1.7.2', os: 'linux' }).hosts[0]!;

  it.each([
    ['a password', 'https://puller:mirror-pw@mirror.example:5000'],
    ['a token in its query', 'https://mirror.example:5000/v2?token=mirror-tok'],
  ])('is mode 0600 and hidden in plan diffs when the mirror URL holds %s', (_what, url) => {
    expect(render(url)).toMatchObject({ mode: 0o600, sensitive: true });
  });

  it('is mode 0644 for a mirror URL without credentials', () => {
    const file = render('https://mirror.example:5000');
    expect(file.mode).toBe(0o644);
    expect(file.sensitive).toBeUndefined();
  });
});

describe('machineadm fetch with a URL it cannot use', () => {
  it.each([
    ['a port above 65535', 'https://puller:fetch-pw-1@127.0.0.1:99999/x?sig=fetch-sig-2'],
    ['a space in the host', 'https://puller:fetch-pw-1@mirror example/x?sig=fetch-sig-2'],
    ['another scheme', 'ftp://puller:fetch-pw-1@mirror.example/x?sig=fetch-sig-2'],
  ])('with %s refuses it (exit 2) without quoting its password or query', async (_what, url) => {
    const dir = scratchDir();
    const out = await runCli(['fetch', url, '-d', join(dir, 'x'), '--sha256', 'a'.repeat(64)]);
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/not a URL that can be parsed|only http:\/\/ and https:\/\/ downloads/);
    expect(out.stdout + out.stderr).not.toMatch(/fetch-pw-1|fetch-sig-2/);
  });
});

describe('validation of URLs that are not what their field takes', () => {
  it('never quotes one that may hold a credential (//user:pw@, user:pw@, http:/, backslashes), nor a mirror\'s password or token in a hint', async () => {
    const dir = scratchDir();
    const sha256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
    const urls = ['//user:pw-1a@host/x', 'user:pw-2b@host/x', 'http:/user:pw-3c@host/x', 'https:\\\\user:pw-4d@host\\x'];
    const spec = {
      files: urls.map((url, i) => ({ path: `/etc/f${i}`, source: { url, sha256 } })),
      kubernetes: { version: 'v1.31.2', controlPlaneEndpoint: '10.0.0.10:6443', token: 'abcdef.0123456789abcdef', caCertHashes: [`sha256:${'a'.repeat(64)}`], install: { baseUrl: 'user:pw-5e@mirror/release' } },
      containerd: { registries: { 'docker.io': { mirrors: [{ url: 'https://u:pw-6f@mirror.example/x?token=tok-6f', overridePath: true }] } } },
    };
    writeFileSync(join(dir, 'c.json'), JSON.stringify({ ...HEADER, spec }));
    const out = await runCli(['config', 'validate', '-c', join(dir, 'c.json')]);
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/invalid configuration \(7 problems\)/);
    expect(out.stderr).toContain('spec.containerd.registries["docker.io"].mirrors[0].url: has a user name, password or query');
    expect(out.stderr).toContain('spec.files[3].source.url: is not an http:// or https:// URL');
    expect(out.stderr).toContain('hint: e.g. https://mirror.example/x/v2');
    for (const secret of ['pw-1a', 'pw-2b', 'pw-3c', 'pw-4d', 'pw-5e', 'pw-6f', 'tok-6f']) expect(out.stderr).not.toContain(secret);
  });
});
