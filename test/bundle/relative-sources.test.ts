// How a bundle's configuration names its files: a relative spec.files[].source.url is a file beside
// the configuration file that names it, and nothing else can be relative.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createHost } from '../../src/host/index.ts';
import { loadConfig } from '../../src/config/load.ts';
import { ConfigError, ExitCode, UsageError } from '../../src/errors.ts';
import { buildBundle, BUNDLE_CONFIG_MARKER } from '../../src/bundle/build.ts';
import { bundleOf } from '../../src/bundle/check.ts';
import type { Host } from '../../src/host/index.ts';
import { scratchDir } from '../support/tmp.ts';

const SHA = 'a'.repeat(64);
const document = (url: string, extra = '') =>
  `apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  files:\n    - { path: /etc/x, source: { url: "${url}", sha256: ${SHA} } }\n${extra}`;

describe('a relative spec.files[].source.url', () => {
  it.each([
    ['files/a.bin', 'files/a.bin'],
    ['../shared/a.bin', '../shared/a.bin'],
    ['./a b.bin', 'a b.bin'],
  ])('%s names the file at %s beside the configuration file', async (given, beside) => {
    const dir = join(scratchDir(), 'bundle');
    mkdirSync(dir);
    writeFileSync(join(dir, 'config.yaml'), document(given));
    const { config } = await loadConfig(createHost({ root: scratchDir() }), [join(dir, 'config.yaml')]);
    expect(config.spec.files?.[0]?.source?.url).toBe(pathToFileURL(join(dir, beside)).href);
  });

  it('is a configuration error from standard input, which is no file to be relative to', async () => {
    const error = await loadConfig(createHost({ root: scratchDir() }), ['-'], { readStdin: async () => Buffer.from(document('files/a.bin')) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(ExitCode.usage);
    expect((error as ConfigError).issues.map((i) => i.path)).toEqual(['spec.files[0].source.url']);
  });

  it.each(['/etc/a.bin', 'ftp://host/a.bin', 'C:\\\\a.bin'])('is not %s, which the schema refuses', async (url) => {
    const dir = scratchDir();
    writeFileSync(join(dir, 'config.yaml'), document(url));
    const error = await loadConfig(createHost({ root: scratchDir() }), [join(dir, 'config.yaml')]).catch((e: unknown) => e);
    expect((error as ConfigError).issues?.map((i) => i.path)).toEqual(['spec.files[0].source.url']);
  });
});

describe('a relative source url of a Windows host agent or djoin blob', () => {
  const windows = (agentSource: string, blob: string) =>
    `apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  windows:\n    hostAgents: [ { name: csi-proxy, source: ${agentSource}, installPath: 'C:\\k\\csi-proxy.exe' } ]\n  domainJoin:\n    domain: corp.example\n    windows: { offlineBlob: ${blob} }\n`;

  it('names the files beside the configuration file', async () => {
    const dir = scratchDir();
    writeFileSync(join(dir, 'config.yaml'), windows(`{ url: agents/0-csi-proxy.exe, sha256: ${SHA} }`, `{ url: domain-join/offline-blob.odj, sha256: ${SHA} }`));
    const { config } = await loadConfig(createHost({ root: scratchDir() }), [join(dir, 'config.yaml')]);
    expect(config.spec.windows?.hostAgents?.[0]?.source.url).toBe(pathToFileURL(join(dir, 'agents/0-csi-proxy.exe')).href);
    expect(config.spec.domainJoin?.windows?.offlineBlob?.url).toBe(pathToFileURL(join(dir, 'domain-join/offline-blob.odj')).href);
  });

  it.each([
    ['a local agent checked only by a signature', `{ url: agents/a.exe, signature: { publicKey: RWQ } }`, `{ url: https://x.example/odj, sha256: ${SHA} }`, ['spec.windows.hostAgents[0].source.sha256']],
    ['a local agent with a signature too', `{ url: file:///b/a.exe, sha256: ${SHA}, signature: { publicKey: RWQ } }`, `{ url: https://x.example/odj, sha256: ${SHA} }`, ['spec.windows.hostAgents[0].source.signature']],
    ['a blob downloaded over plain http', `{ url: https://x.example/a.exe, sha256: ${SHA} }`, `{ url: http://x.example/odj, sha256: ${SHA} }`, ['spec.domainJoin.windows.offlineBlob.url']],
    ['a local blob without its sha256', `{ url: https://x.example/a.exe, sha256: ${SHA} }`, '{ url: domain-join/offline-blob.odj }', ['spec.domainJoin.windows.offlineBlob.sha256']],
  ])('refuses %s', async (_name, agent, blob, paths) => {
    const dir = scratchDir();
    writeFileSync(join(dir, 'config.yaml'), windows(agent, blob));
    const error = await loadConfig(createHost({ root: scratchDir() }), [join(dir, 'config.yaml')]).catch((e: unknown) => e);
    expect((error as ConfigError).issues?.map((i) => i.path)).toEqual(expect.arrayContaining(paths));
  });

  it('is a configuration error from standard input', async () => {
    const error = await loadConfig(createHost({ root: scratchDir() }), ['-'], { readStdin: async () => Buffer.from(windows(`{ url: agents/a.exe, sha256: ${SHA} }`, `{ url: odj.txt, sha256: ${SHA} }`)) }).catch((e: unknown) => e);
    expect((error as ConfigError).issues.map((i) => i.path)).toEqual(['spec.windows.hostAgents[0].source.url', 'spec.domainJoin.windows.offlineBlob.url']);
  });
});

describe('buildBundle refuses', () => {
  it('a directory that is not empty, before downloading anything', async () => {
    const dir = join(scratchDir(), 'out');
    const host = createHost({ root: scratchDir() });
    mkdirSync(dir);
    writeFileSync(join(dir, 'left-over'), 'x');
    const source = join(scratchDir(), 'node.yaml');
    writeFileSync(source, document('https://x.example/a'));
    const { config } = await loadConfig(host, [source]);
    const error = await buildBundle(host, { config, destination: dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toMatch(/is not empty/);
  });

  it.each(['bundle', 'deeper/bundle'])('a directory %s under a regular file (exit 2), naming the file, before downloading anything', async (below) => {
    const file = join(scratchDir(), 'a-file');
    writeFileSync(file, 'stays\n');
    const host = createHost({ root: scratchDir() });
    const source = join(scratchDir(), 'node.yaml');
    // Nothing answers on port 9: a download tried first would fail otherwise (exit 1).
    writeFileSync(source, document('http://127.0.0.1:9/a'));
    const { config } = await loadConfig(host, [source]);
    const error = await buildBundle(host, { config, destination: join(file, below) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).exitCode).toBe(ExitCode.usage);
    expect((error as Error).message).toBe(`${join(file, below)} cannot be made: ${file} is a file, not a directory`);
    expect(readFileSync(file, 'utf8')).toBe('stays\n');
  });
});

describe('buildBundle of spec.kubernetes.install with pinned sha256s', () => {
  const pinned = (extra: string) =>
    `apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  kubernetes:\n    version: v1.31.2\n    controlPlaneEndpoint: 10.0.0.10:6443\n    token: abcdef.0123456789abcdef\n    caCertHashes: [ "sha256:${'ab'.repeat(32)}" ]\n    install:\n      baseUrl: http://127.0.0.1:9/release\n${extra}`;

  it.each([
    ['a binary', `      sha256: { kubelet: ${SHA} }\n`, 'spec.kubernetes.install.sha256.kubelet pins one file'],
    ['crictl and a binary', `      sha256: { kubeadm: ${SHA} }\n      crictl: { version: v1.31.1, sha256: ${SHA} }\n`, 'spec.kubernetes.install.sha256.kubeadm, spec.kubernetes.install.crictl.sha256 pin one file each'],
  ])('refuses %s pinned for the two Linux platforms it bundles by default, before downloading anything', async (_what, extra, said) => {
    const dir = join(scratchDir(), 'out');
    const host = createHost({ root: scratchDir() });
    const source = join(scratchDir(), 'node.yaml');
    writeFileSync(source, pinned(extra));
    const { config } = await loadConfig(host, [source]);
    const error = await buildBundle(host, { config, destination: dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).exitCode).toBe(ExitCode.usage);
    expect((error as Error).message).toContain(`${said}, so one platform's, and the bundle is for linux-x64, linux-arm64`);
    expect((error as UsageError).hint).toMatch(/--platform linux-x64/);
  });
});

describe('the bundle a configuration file belongs to', () => {
  // The files of one bundle, as host.local sees them on each system.
  const local = (files: Record<string, string>) => ({
    local: {
      stat: async (path: string) => (path in files ? { kind: 'file' } : undefined),
      readText: async (path: string) => files[path],
    },
  }) as unknown as Pick<Host, 'local'>;

  it.each([
    ['a POSIX path', '/media/usb/node-bundle', '/'],
    ['a Windows path', 'D:\\node-bundle', '\\'],
  ])('is found from %s to its config.yaml, so that the bundle is checked as a whole', async (_what, dir, separator) => {
    const config = `${dir}${separator}config.yaml`;
    const host = local({ [`${dir}/SHA256SUMS`]: '', [config]: `${BUNDLE_CONFIG_MARKER}\nspec: {}\n` });
    expect(await bundleOf(host, config)).toBe(dir);
    expect(await bundleOf(host, `${dir}${separator}other.yaml`)).toBeUndefined();
  });
});
