// Air-gapped bundles with the packaged binary: built from a server on 127.0.0.1, copied elsewhere,
// then used by init in a network namespace whose only interface (loopback) is down.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtBinary } from '../support/binary.ts';
import { scratchDir } from '../support/tmp.ts';
import { missingRequirement } from '../support/environment.ts';

const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

// Served files: a binary blob and a text file, each named in spec.files by its URL and sha256.
const SERVED: Record<string, Buffer> = { '/kubelet': randomBytes(3 * 1024 * 1024 + 17), '/motd.txt': Buffer.from('from the bundle\n') };
// A stand-in release (signed below with a key made for the test), and one whose bytes changed after signing.
const RELEASE = randomBytes(200_000);

function config(base: string): string {
  return `apiVersion: machineadm.cluster.x-k8s.io/v1alpha1
kind: MachineConfig
spec:
  sysctls:
    net.ipv4.ip_forward: "1"
  files:
    - path: /usr/local/bin/kubelet
      source: { url: ${base}/kubelet, sha256: ${sha256(SERVED['/kubelet']!)} }
      mode: "0755"
    - path: /etc/motd
      source: { url: ${base}/motd.txt, sha256: ${sha256(SERVED['/motd.txt']!)} }
    - path: /etc/machineadm/inline
      content: "inline\\n"
  containerd:
    version: "1.7"
  kubernetes:
    role: worker
    bootstrap: join
    version: v1.31.2
    controlPlaneEndpoint: 10.0.0.10:6443
    token: abcdef.0123456789abcdef
    caCertHashes:
      - sha256:0f0e0d0c0b0a09080706050403020100f0e0d0c0b0a09080706050403020100f
`;
}

function run(binary: string, args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { cwd, env: {} });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

// Every path under the root, for "nothing changed".
function tree(root: string): string[] {
  return existsSync(root) ? readdirSync(root, { recursive: true, encoding: 'utf8' }).sort() : [];
}

describe('machineadm bundle, then init --offline without a network', () => {
  let binary: string;
  let server: Server;
  const requests: string[] = [];
  const work = scratchDir('machineadm-bundle-');
  const bundle = join(work, 'bundle');
  const copied = join(work, 'usb', 'node-bundle');
  const missing = missingRequirement({ root: true, commands: ['unshare'] });

  beforeAll(async () => {
    binary = await builtBinary();
    server = createServer((req, res) => {
      requests.push(req.url ?? '');
      const body = SERVED[req.url ?? ''];
      res.writeHead(body ? 200 : 404, { 'content-length': body?.length ?? 0 }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    writeFileSync(join(work, 'node.yaml'), config(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  }, 600_000);
  afterAll(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it('downloads and verifies every source into the directory, with a manifest and a configuration relative to it', async () => {
    const result = await run(binary, ['bundle', '-c', 'node.yaml', '-d', 'bundle'], work);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(requests.sort()).toEqual(['/kubelet', '/motd.txt']);
    const manifest = readFileSync(join(bundle, 'SHA256SUMS'), 'utf8');
    const sums = spawnSync('sha256sum', ['-c', 'SHA256SUMS'], { cwd: bundle, encoding: 'utf8' });
    expect(sums.status, sums.stdout + sums.stderr).toBe(0);
    expect(manifest.trim().split('\n')).toHaveLength(3);
    const written = readFileSync(join(bundle, 'config.yaml'), 'utf8');
    expect(written).not.toMatch(/127\.0\.0\.1|file:/);
    expect(written).toContain('url: files/0-kubelet');
    cpSync(bundle, copied, { recursive: true });
  });

  it('gives init everything it needs: success, every file in place, nothing asked of the network', async (context) => {
    if (missing) return context.skip(missing);
    const root = scratchDir('machineadm-bundle-root-');
    const before = requests.length;
    const result = await run('unshare', ['-n', binary, 'init', '--offline', '-c', join(copied, 'config.yaml'), '--root', root, '-o', 'json'], work);
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(join(root, 'usr/local/bin/kubelet')).equals(SERVED['/kubelet']!)).toBe(true);
    expect(readFileSync(join(root, 'etc/motd'), 'utf8')).toBe('from the bundle\n');
    expect(readFileSync(join(root, 'etc/machineadm/inline'), 'utf8')).toBe('inline\n');
    expect(requests.length).toBe(before);
    // No step reported a network use or a refusal for --offline.
    expect(result.stdout).not.toMatch(/offline|download http/i);
  });

  it('fails with exit 3 before anything changes when a file in the bundle was tampered with', async (context) => {
    if (missing) return context.skip(missing);
    const tampered = join(work, 'tampered');
    cpSync(copied, tampered, { recursive: true });
    const motd = join(tampered, 'files', '1-motd');
    writeFileSync(motd, 'changed on the way\n');
    const root = scratchDir('machineadm-bundle-tampered-');
    const result = await run('unshare', ['-n', binary, 'init', '--offline', '-c', join(tampered, 'config.yaml'), '--root', root], work);
    expect(result.code, result.stderr).toBe(3);
    // The bundle is checked as a whole before its configuration is read (3.7).
    expect(result.stderr).toMatch(/^error: bundle .*: files\/1-motd has sha256 [0-9a-f]{64}, but SHA256SUMS says/);
    expect(tree(root).filter((p) => !p.startsWith('var/lib/machineadm') && !p.startsWith('run/'))).toEqual([]);
  });
});

describe('machineadm bundle --binaries-url', () => {
  let binary: string;
  let server: Server;
  let base: string;
  const work = scratchDir('machineadm-bundle-bin-');

  beforeAll(async () => {
    binary = await builtBinary();
    writeFileSync(join(work, 'machineadm-linux-x64'), RELEASE);
    for (const args of [['keygen', '-p', 'test.pub', '-s', 'test.key'], ['sign', 'machineadm-linux-x64', '-s', 'test.key']]) {
      const made = await run(binary, args, work);
      expect(made.code, made.stderr).toBe(0);
    }
    const signature = readFileSync(join(work, 'machineadm-linux-x64.minisig'));
    const files: Record<string, Buffer> = {
      '/good/machineadm-linux-x64': RELEASE,
      '/good/machineadm-linux-x64.minisig': signature,
      '/changed/machineadm-linux-x64': Buffer.concat([RELEASE, Buffer.from('x')]),
      '/changed/machineadm-linux-x64.minisig': signature,
    };
    server = createServer((req, res) => {
      const body = files[req.url ?? ''];
      res.writeHead(body ? 200 : 404, { 'content-length': body?.length ?? 0 }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    writeFileSync(join(work, 'node.yaml'), config('https://unused.example').replace(/ {4}- path: \/usr[\s\S]*?(?= {4}- path: \/etc\/machineadm\/inline)/, ''));
  }, 600_000);
  afterAll(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it('keeps each binary with the signature it was checked against, in the manifest', async () => {
    const result = await run(binary, ['bundle', '-c', 'node.yaml', '-d', 'out', '--binaries-url', `${base}/good`, '--platform', 'linux-x64', '-p', 'test.pub'], work);
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(join(work, 'out', 'bin', 'machineadm-linux-x64')).equals(RELEASE)).toBe(true);
    expect(readFileSync(join(work, 'out', 'SHA256SUMS'), 'utf8')).toContain(`${sha256(RELEASE)}  bin/machineadm-linux-x64\n`);
    const verified = await run(binary, ['verify', 'out/bin/machineadm-linux-x64', '-p', 'test.pub'], work);
    expect(verified.code, verified.stderr).toBe(0);
  });

  it('fails with exit 3 and leaves no bundle when a binary does not match its signature', async () => {
    const result = await run(binary, ['bundle', '-c', 'node.yaml', '-d', 'refused', '--binaries-url', `${base}/changed`, '--platform', 'linux-x64', '-p', 'test.pub'], work);
    expect(result.code, result.stderr).toBe(3);
    expect(existsSync(join(work, 'refused'))).toBe(false);
  });
});

describe('machineadm bundle of a Windows configuration', () => {
  let binary: string;
  let server: Server;
  let base: string;
  const work = scratchDir('machineadm-bundle-windows-');
  const AGENT = randomBytes(50_000);
  const SIGNED = randomBytes(40_000);

  function windowsConfig(agentPath: string): string {
    return `apiVersion: machineadm.cluster.x-k8s.io/v1alpha1
kind: MachineConfig
spec:
  windows:
    hostAgents:
      - name: csiproxy
        source: { url: ${base}${agentPath}, sha256: ${sha256(AGENT)} }
        installPath: 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe'
      - name: nodeagent
        source: { url: ${base}/node-agent.exe, signature: { publicKey: ${readFileSync(join(work, 'test.pub'), 'utf8').trim().split('\n').pop()} } }
        installPath: 'C:\\k\\node-agent.exe'
  kubernetes:
    role: worker
    bootstrap: join
    controlPlaneEndpoint: 10.0.0.10:6443
    token: abcdef.0123456789abcdef
    caCertHashes:
      - sha256:0f0e0d0c0b0a09080706050403020100f0e0d0c0b0a09080706050403020100f
`;
  }

  beforeAll(async () => {
    binary = await builtBinary();
    writeFileSync(join(work, 'node-agent.exe'), SIGNED);
    for (const args of [['keygen', '-p', 'test.pub', '-s', 'test.key'], ['sign', 'node-agent.exe', '-s', 'test.key']]) {
      const made = await run(binary, args, work);
      expect(made.code, made.stderr).toBe(0);
    }
    const files: Record<string, Buffer> = {
      '/csi-proxy.exe': AGENT,
      '/changed.exe': Buffer.concat([AGENT, Buffer.from('x')]),
      '/node-agent.exe': SIGNED,
      '/node-agent.exe.minisig': readFileSync(join(work, 'node-agent.exe.minisig')),
    };
    server = createServer((req, res) => {
      const body = files[req.url ?? ''];
      res.writeHead(body ? 200 : 404, { 'content-length': body?.length ?? 0 }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 600_000);
  afterAll(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it('carries the host agents, the one checked by its signature named by the sha256 it was checked at', async () => {
    writeFileSync(join(work, 'windows.yaml'), windowsConfig('/csi-proxy.exe'));
    const result = await run(binary, ['bundle', '-c', 'windows.yaml', '-d', 'out'], work);
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(join(work, 'out', 'agents', '0-csi-proxy.exe')).equals(AGENT)).toBe(true);
    expect(readFileSync(join(work, 'out', 'agents', '1-node-agent.exe')).equals(SIGNED)).toBe(true);
    const written = readFileSync(join(work, 'out', 'config.yaml'), 'utf8');
    expect(written).not.toMatch(/127\.0\.0\.1|publicKey/);
    expect(written).toContain(`url: agents/1-node-agent.exe\n          sha256: ${sha256(SIGNED)}`);
    const sums = spawnSync('sha256sum', ['-c', 'SHA256SUMS'], { cwd: join(work, 'out'), encoding: 'utf8' });
    expect(sums.status, sums.stdout + sums.stderr).toBe(0);
    // The bundle's configuration is a valid configuration where it is copied to.
    cpSync(join(work, 'out'), join(work, 'copied'), { recursive: true });
    const valid = await run(binary, ['config', 'validate', '-c', join(work, 'copied', 'config.yaml')], work);
    expect(valid.code, valid.stderr).toBe(0);
  });

  it('fails with exit 3, naming the host agent, and leaves no bundle when a download does not match its sha256', async () => {
    writeFileSync(join(work, 'changed.yaml'), windowsConfig('/changed.exe'));
    const result = await run(binary, ['bundle', '-c', 'changed.yaml', '-d', 'refused'], work);
    expect(result.code, result.stderr).toBe(3);
    expect(result.stderr).toMatch(/spec\.windows\.hostAgents\[0\]\.source: .*SHA-256/);
    expect(existsSync(join(work, 'refused'))).toBe(false);
  });
});
