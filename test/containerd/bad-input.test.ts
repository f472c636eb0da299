// Bad spec.containerd input: each gets a clear error naming the field (and the TOML line for
// extraConfig), exit code 2, and nothing is written under the root.
import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { scratchDir } from '../support/tmp.ts';
import { runCli } from '../support/cli.ts';

const base = scratchDir('machineadm-bad-containerd-');
let n = 0;

async function prepareWith(containerd: Record<string, unknown>) {
  const config = join(base, `config-${n}.yaml`);
  const root = join(base, `root-${n++}`);
  writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { sysctls: { 'net.ipv4.ip_forward': '1' }, containerd } }));
  const result = await runCli(['prepare', '-c', config, '--root', root]);
  return { ...result, root };
}

describe('bad spec.containerd input', () => {
  it.each([
    ['extraConfig that is not TOML', { extraConfig: 'oom_score = -999\nroot = \n' }, 'spec.containerd.extraConfig: TOML line 2: is not valid TOML'],
    [
      'extraConfig giving a generated key another type',
      { sandboxImage: 'registry.k8s.io/pause:3.10', extraConfig: '[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = 310\n' },
      'spec.containerd.extraConfig: TOML line 2: plugins."io.containerd.grpc.v1.cri".sandbox_image is the integer 310; containerd reads a string there',
    ],
    [
      'extraConfig giving sandbox_image an integer without sandboxImage (containerd 1.6 refuses the file: "Can\'t convert 5(int64) to string")',
      { extraConfig: '[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = 5\n' },
      'spec.containerd.extraConfig: TOML line 2: plugins."io.containerd.grpc.v1.cri".sandbox_image is the integer 5; containerd reads a string there (config version 2, containerd 1.x)\n    hint: put the value in quotes',
    ],
    [
      'extraConfig giving a float key an integer (containerd refuses "Can\'t convert 1(int64) to float64")',
      { extraConfig: '[plugins."io.containerd.gc.v1.scheduler"]\n  pause_threshold = 1\n' },
      'spec.containerd.extraConfig: TOML line 2: plugins."io.containerd.gc.v1.scheduler".pause_threshold is the integer 1; containerd reads a float there',
    ],
    [
      'extraConfig misspelling a runc option (containerd would drop it silently)',
      { extraConfig: '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n  SystemdCgroups = true\n' },
      'spec.containerd.extraConfig: TOML line 2: plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options.SystemdCgroups is not a runc option, and containerd would drop it without a word (did you mean "SystemdCgroup"?)',
    ],
    [
      'extraConfig replacing a generated table with a value',
      { extraConfig: '[plugins."io.containerd.grpc.v1.cri".containerd]\n  runtimes = "runc"\n' },
      'plugins."io.containerd.grpc.v1.cri".containerd.runtimes is the string "runc"; containerd reads a table there',
    ],
    ['extraConfig setting the config version', { extraConfig: 'version = 3\n' }, 'spec.containerd.extraConfig: TOML line 1: sets "version"'],
    [
      'extraConfig turning runc\'s SystemdCgroup on while cgroupDriver is cgroupfs',
      { cgroupDriver: 'cgroupfs', extraConfig: 'oom_score = -999\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n' },
      'spec.containerd.extraConfig: TOML line 3: sets plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options.SystemdCgroup = true, but spec.containerd.cgroupDriver is cgroupfs, the driver the kubelet is given too\n    hint: set spec.containerd.cgroupDriver: systemd instead',
    ],
    [
      'extraConfig adding registry mirrors next to config_path',
      { extraConfig: '[plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]\n  endpoint = ["https://m.example"]\n' },
      '"mirrors" together with the config_path machineadm writes makes the CRI plugin fail to load',
    ],
    [
      'extraConfig adding registry TLS settings below a configs table machineadm does not generate',
      { extraConfig: '[plugins."io.containerd.grpc.v1.cri".registry.configs."registry.example".tls]\n  ca_file = "/etc/ca.pem"\n' },
      'spec.containerd.extraConfig: TOML line 1: sets plugins."io.containerd.grpc.v1.cri".registry.configs."registry.example".tls: "configs.<host>.tls" together with config_path',
    ],
    ['a mirror URL that is not http(s)', { registries: { 'docker.io': { mirrors: [{ url: 'ftp://mirror.example' }] } } }, 'spec.containerd.registries["docker.io"].mirrors[0].url: "ftp://mirror.example" is not valid\n    hint: only http:// and https:// URLs are supported'],
    ['a relative CA file', { registries: { 'docker.io': { mirrors: [{ url: 'https://m.example', caFile: 'ca.pem' }] } } }, 'spec.containerd.registries["docker.io"].mirrors[0].caFile: "ca.pem" is not an absolute path'],
    ['the same mirror listed twice', { registries: { 'docker.io': { mirrors: [{ url: 'https://m.example/' }, { url: 'https://m.example', skipVerify: true }] } } }, 'spec.containerd.registries["docker.io"].mirrors[1].url: the same mirror as mirrors[0]'],
    ['a registry name that is not a host', { registries: { 'docker.io/library': {} } }, 'spec.containerd.registries["docker.io/library"]'],
    ['a registry name that climbs out of certs.d', { registries: { '..': { skipVerify: true } } }, 'spec.containerd.registries[".."]: ".." is not valid\n    hint: a registry host'],
    [
      'a CA certificate that does not parse (containerd would then fail every pull)',
      { caCertificates: ['-----BEGIN CERTIFICATE-----\nMIIBozCCAUmgAwIBAgIUPrsvHGVicAu92m5tQXWaxJDUnuAw\n-----END CERTIFICATE-----\n'] },
      'spec.containerd.caCertificates[0]: certificate 1 in this entry cannot be read',
    ],
    ['a CA certificate without its END line', { caCertificates: ['-----BEGIN CERTIFICATE-----\nMIIB\n'] }, 'spec.containerd.caCertificates[0]: has no complete PEM certificate'],
    [
      'a mirror CA file that does not exist (containerd would fail every pull through the mirror)',
      { registries: { 'docker.io': { mirrors: [{ url: 'https://m.example', caFile: '/etc/ssl/mirror.pem' }] } } },
      'spec.containerd.registries["docker.io"].mirrors[0].caFile: /etc/ssl/mirror.pem does not exist under',
    ],
    ['a registry CA file that does not exist', { registries: { 'registry.internal:5000': { caFile: '/etc/ssl/internal.pem' } } }, 'spec.containerd.registries["registry.internal:5000"].caFile: /etc/ssl/internal.pem does not exist under'],
    ['a proxy that is not a URL', { proxy: { httpsProxy: 'proxy.example:3128' } }, 'spec.containerd.proxy.httpsProxy'],
    ['a no-proxy entry with a comma', { proxy: { noProxy: ['a.example,b.example'] } }, 'spec.containerd.proxy.noProxy[0]'],
  ])('refuses %s, naming the field, before anything is written', async (_what, containerd, message) => {
    const result = await prepareWith(containerd);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(existsSync(result.root)).toBe(false);
  });

  // The kubelet's cgroupDriver comes from spec.containerd.cgroupDriver: containerd on cgroupfs
  // under a kubelet on systemd was accepted, and only the pods showed it.
  it("refuses extraConfig turning runc's SystemdCgroup off while the kubelet gets the systemd driver (the default cgroupDriver), naming the field, before anything is written", async () => {
    const result = await prepareWith({ extraConfig: '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n  SystemdCgroup = false\n' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('spec.containerd.extraConfig: TOML line 2: sets plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options.SystemdCgroup = false, but spec.containerd.cgroupDriver is systemd (the default), the driver the kubelet is given too\n    hint: set spec.containerd.cgroupDriver: cgroupfs instead');
    expect(existsSync(result.root)).toBe(false);
  });

  // Each containerd step rendered the file and said the same problem again, without its line.
  it('refuses extraConfig written for the other config version once, with its TOML line, before anything is written', async () => {
    const result = await prepareWith({ version: '1.7', extraConfig: 'oom_score = -999\n\n[plugins."io.containerd.cri.v1.runtime".containerd]\n  snapshotter = "native"\n' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('invalid configuration (1 problem)');
    expect(result.stderr).toContain('spec.containerd.extraConfig: TOML line 3: sets plugins."io.containerd.cri.v1.runtime", a config version 3 (containerd 2.x) section, but this containerd takes config version 2');
    expect(existsSync(result.root)).toBe(false);
  });

  // containerd uses only the scheme, host and path of a mirror URL: the mirror answered 401 to the
  // pull, and containerd went on to the registry itself.
  it.each([
    ['a user and password', 'https://puller:mirror-pw1@mirror.example:5000'],
    ['a token in its query', 'https://mirror.example:5000/v2/proxy?token=mirror-tok1'],
  ])('refuses a mirror URL with %s, which containerd never sends, without quoting it', async (_what, url) => {
    const result = await prepareWith({ registries: { 'docker.io': { mirrors: [{ url }] } } });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('spec.containerd.registries["docker.io"].mirrors[0].url: has a user name, password or query, which containerd leaves out of every request to the mirror');
    expect(result.stderr).toContain('registry.configs');
    expect(result.stderr).not.toMatch(/mirror-pw1|mirror-tok1/);
    expect(existsSync(result.root)).toBe(false);
  });

  it('refuses a proxy URL without quoting it, since it may hold a password', async () => {
    const result = await prepareWith({ proxy: { httpsProxy: 'http://user:hunter2 secret@proxy.example:3128' } });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('spec.containerd.proxy.httpsProxy: is not an http:// or https:// URL');
    expect(result.stderr).not.toContain('hunter2');
  });

  it.each([
    ['plan', ['plan']],
    ['config validate', ['config', 'validate']],
  ])('%s finds a CA file that is not a PEM certificate, naming the field and its line', async (_name, command) => {
    const config = join(base, `ca-${n}.yaml`);
    const root = join(base, `root-${n++}`);
    mkdirSync(join(root, 'etc/ssl'), { recursive: true });
    writeFileSync(join(root, 'etc/ssl/mirror.pem'), 'not a certificate\n');
    writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { containerd: { registries: { 'docker.io': { mirrors: [{ url: 'https://m.example', caFile: '/etc/ssl/mirror.pem' }] } } } } }));
    const result = await runCli([...command, '-c', config, '--root', root]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${config}:9:13: spec.containerd.registries["docker.io"].mirrors[0].caFile: /etc/ssl/mirror.pem has no complete PEM certificate`);
  });

  it('accepts a CA file that spec.files writes before containerd is configured', async () => {
    const config = join(base, `ca-${n}.yaml`);
    const root = join(base, `root-${n++}`);
    const pem = readFileSync(join(import.meta.dirname, '../../examples/linux-worker.yaml'), 'utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/)![0].replace(/^ +/gm, '');
    const spec = { files: [{ path: '/etc/ssl/mirror.pem', content: `${pem}\n` }], containerd: { registries: { 'docker.io': { mirrors: [{ url: 'https://m.example', caFile: '/etc/ssl/mirror.pem' }] } } } };
    writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec }));
    const result = await runCli(['prepare', '-c', config, '--root', root]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(readFileSync(join(root, 'etc/containerd/certs.d/docker.io/hosts.toml'), 'utf8')).toContain('ca = "/etc/ssl/mirror.pem"');
  });

  // The link was refused only at the step's turn, after spec.sysctls' file was written.
  it('refuses a config.toml that is a symbolic link before any change (exit 2), naming the path and what to do', async () => {
    const config = join(base, `link-${n}.yaml`);
    const root = join(base, `root-${n++}`);
    mkdirSync(join(root, 'etc/containerd'), { recursive: true });
    mkdirSync(join(root, 'opt'), { recursive: true });
    writeFileSync(join(root, 'opt/config.toml'), 'version = 2\n');
    symlinkSync('../../opt/config.toml', join(root, 'etc/containerd/config.toml'));
    writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { sysctls: { 'net.ipv4.ip_forward': '1' }, containerd: {} } }));
    for (const command of ['plan', 'prepare']) {
      const result = await runCli([command, '-c', config, '--root', root]);
      expect(result.code, result.stdout + result.stderr).toBe(2);
      expect(result.stderr).toContain('spec.containerd: /etc/containerd/config.toml is a symbolic link; machineadm does not write through links');
      expect(result.stderr).toContain('remove the link');
    }
    expect(existsSync(join(root, 'etc/sysctl.d'))).toBe(false);
    expect(readFileSync(join(root, 'opt/config.toml'), 'utf8')).toBe('version = 2\n');
  });

  // The link was refused only at the step's turn, after config.toml and spec.sysctls' file were written.
  it("refuses a proxy drop-in path that is a symbolic link before any change (exit 2), naming the path and what to do", async () => {
    const config = join(base, `proxy-link-${n}.yaml`);
    const root = join(base, `root-${n++}`);
    const dropIns = join(root, 'etc/systemd/system/containerd.service.d');
    mkdirSync(dropIns, { recursive: true });
    mkdirSync(join(root, 'opt'), { recursive: true });
    writeFileSync(join(root, 'opt/proxy.conf'), '[Service]\n');
    symlinkSync('../../../../opt/proxy.conf', join(dropIns, 'machineadm-proxy.conf'));
    writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { sysctls: { 'net.ipv4.ip_forward': '1' }, containerd: { proxy: { httpsProxy: 'http://proxy.internal:3128' } } } }));
    for (const command of ['plan', 'prepare']) {
      const result = await runCli([command, '-c', config, '--root', root]);
      expect(result.code, result.stdout + result.stderr).toBe(2);
      expect(result.stderr).toContain('/etc/systemd/system/containerd.service.d/machineadm-proxy.conf is a symbolic link; machineadm does not write through links');
      expect(result.stderr).toContain('remove the link');
    }
    expect(existsSync(join(root, 'etc/sysctl.d'))).toBe(false);
    expect(existsSync(join(root, 'etc/containerd/config.toml'))).toBe(false);
    expect(readFileSync(join(root, 'opt/proxy.conf'), 'utf8')).toBe('[Service]\n');
  });

  it('accepts extraConfig overriding a generated value with one of the same type', async () => {
    const result = await prepareWith({ sandboxImage: 'registry.k8s.io/pause:3.10', extraConfig: '[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "registry.internal.example/pause:3.10"\n' });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});
