// A bundle checked as a whole before init uses it (--bundle: SHA256SUMS names every file, each
// with its sum, bin/* included), and signed with the operator's minisign key (bundle --sign-key,
// init --bundle-public-key[-file]); signatures made by machineadm checked by the real minisign and
// the other way round. Sources are served from 127.0.0.1; machineadm runs from source.
import { execFile, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { appendFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';
import { startHttp, type RunningServer } from '../config/helpers/servers.ts';

const REPO = join(import.meta.dirname, '..', '..');
const skip = missingRequirement({ commands: ['minisign'] });
const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');
const SERVED: Record<string, Buffer> = { '/kubelet': randomBytes(300_000), '/motd.txt': Buffer.from('from the bundle\n'), '/machineadm-linux-x64': randomBytes(50_000) };

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

// Asynchronous: the server answers from this process while machineadm runs.
function machineadm(args: string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(REPO, 'bin/machineadm.js'), ...args], { cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

function minisign(args: string[], cwd: string, input?: string): Run {
  const r = spawnSync('minisign', args, { cwd, encoding: 'utf8', ...(input !== undefined ? { input } : {}) });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

function filesUnder(dir: string): string[] {
  return existsSync(dir) ? (readdirSync(dir, { recursive: true }) as string[]).sort() : [];
}

describe.skipIf(skip)('a bundle checked as a whole, and signed with the operator\'s minisign key', () => {
  let server: RunningServer;
  const work = scratchDir();
  let bundle: string;

  beforeAll(async () => {
    server = await startHttp((req, res) => {
      const body = SERVED[req.url ?? ''] ?? (req.url === '/machineadm-linux-x64.minisig' ? readFileSync(join(work, 'release.minisig')) : undefined);
      if (body === undefined) res.writeHead(404).end();
      else res.writeHead(200, { 'content-length': body.length }).end(body);
    });
    // The release's own key signs the stand-in binary; the operator's key (machineadm keygen) signs bundles.
    writeFileSync(join(work, 'machineadm-linux-x64'), SERVED['/machineadm-linux-x64']!);
    expect((await machineadm(['keygen', '-p', 'release.pub', '-s', 'release.key'], work)).code).toBe(0);
    expect((await machineadm(['sign', 'machineadm-linux-x64', '-s', 'release.key', '-x', 'release.minisig'], work)).code).toBe(0);
    expect((await machineadm(['keygen', '-p', 'operator.pub', '-s', 'operator.key'], work)).code).toBe(0);
    writeFileSync(
      join(work, 'node.yaml'),
      `apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  files:\n    - { path: /usr/local/bin/kubelet, mode: "0755", source: { url: ${server.url}/kubelet, sha256: ${sha256(SERVED['/kubelet']!)} } }\n    - { path: /etc/motd, source: { url: ${server.url}/motd.txt, sha256: ${sha256(SERVED['/motd.txt']!)} } }\n`,
    );
    bundle = join(work, 'bundle');
    const made = await machineadm(['bundle', '-c', 'node.yaml', '-d', bundle, '--binaries-url', server.url, '--platform', 'linux-x64', '-p', 'release.pub', '--sign-key', 'operator.key'], work);
    expect(made.stderr).toBe('');
    expect(made.code).toBe(0);
    expect(made.stdout).toContain(`signed ${bundle}/SHA256SUMS with key `);
  }, 120_000);
  afterAll(async () => server?.close());

  /** A copy of the bundle to change. */
  function copy(): string {
    const dir = join(scratchDir(), 'bundle');
    cpSync(bundle, dir, { recursive: true });
    return dir;
  }

  it('writes SHA256SUMS.minisig, which the real minisign verifies with the operator\'s public key', () => {
    expect(filesUnder(bundle)).toEqual(['SHA256SUMS', 'SHA256SUMS.minisig', 'bin', 'bin/machineadm-linux-x64', 'bin/machineadm-linux-x64.minisig', 'config.yaml', 'files', 'files/0-kubelet', 'files/1-motd']);
    const r = minisign(['-Vm', 'SHA256SUMS', '-p', join(work, 'operator.pub')], bundle);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^Signature and comment signature verified\nTrusted comment: timestamp:\d+\tfile:SHA256SUMS\thashed/);
    expect(spawnSync('sha256sum', ['-c', '--quiet', 'SHA256SUMS'], { cwd: bundle }).status).toBe(0);
  });

  it('signs with a password-protected key made by minisign -G, and minisign verifies it', async () => {
    expect(minisign(['-G', '-p', 'mini.pub', '-s', 'mini.key'], work, 'secret\nsecret\n').code).toBe(0);
    writeFileSync(join(work, 'mini.password'), 'secret\n');
    const dir = join(scratchDir(), 'mini-bundle');
    const made = await machineadm(['bundle', '-c', 'node.yaml', '-d', dir, '--sign-key', 'mini.key', '--password-file', 'mini.password'], work);
    expect(made.stderr).toBe('');
    expect(made.code).toBe(0);
    expect(minisign(['-Vm', 'SHA256SUMS', '-p', join(work, 'mini.pub')], dir).code).toBe(0);
  });

  it('accepts the signed bundle: plan --bundle with the operator\'s public key reads its config.yaml', async () => {
    const r = await machineadm(['plan', '--offline', '--bundle', bundle, '--bundle-public-key-file', 'operator.pub', '--root', scratchDir()], work);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('/usr/local/bin/kubelet');
  });

  it('accepts a bundle whose SHA256SUMS the real minisign signed (minisign -Sm)', async () => {
    expect(minisign(['-G', '-W', '-p', 'other.pub', '-s', 'other.key'], work).code).toBe(0);
    const dir = copy();
    expect(minisign(['-Sm', 'SHA256SUMS', '-s', join(work, 'other.key')], dir).code).toBe(0);
    const key = readFileSync(join(work, 'other.pub'), 'utf8').trim().split('\n').pop()!;
    const r = await machineadm(['plan', '--offline', '--bundle', dir, '--bundle-public-key', key, '--root', scratchDir()], work);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    // ... and refuses it with the key that did not sign it.
    const wrong = await machineadm(['plan', '--offline', '--bundle', dir, '--bundle-public-key-file', 'operator.pub', '--root', scratchDir()], work);
    expect(wrong.code).toBe(3);
  });

  // A file edited together with its sha256 in config.yaml passes the configuration's own check;
  // the bundle's check finds config.yaml changed, and with SHA256SUMS rewritten too, the signature.
  it('refuses a file edited together with its sha256 in config.yaml (exit 3), before anything changes', async () => {
    const dir = copy();
    const evil = Buffer.from('edited\n');
    writeFileSync(join(dir, 'files/1-motd'), evil);
    const text = readFileSync(join(dir, 'config.yaml'), 'utf8');
    writeFileSync(join(dir, 'config.yaml'), text.replace(sha256(SERVED['/motd.txt']!), sha256(evil)));
    const root = scratchDir();
    const r = await machineadm(['init', '--offline', '--bundle', dir, '--root', root], work);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^error: bundle .*: files\/1-motd has sha256 [0-9a-f]{64}, but SHA256SUMS says [0-9a-f]{64}\nhint: the file was changed or damaged after the bundle was made/);
    expect(filesUnder(root)).toEqual([]);
    // The same with the bundle's config.yaml given as -c, the way before --bundle.
    const byConfig = await machineadm(['init', '--offline', '-c', join(dir, 'config.yaml'), '--root', root], work);
    expect(byConfig.code).toBe(3);
    expect(byConfig.stderr).toMatch(/^error: bundle .*: files\/1-motd has sha256/);
    expect(filesUnder(root)).toEqual([]);

    // With SHA256SUMS rewritten to match, only the signature tells.
    const sums = readFileSync(join(dir, 'SHA256SUMS'), 'utf8')
      .replace(sha256(SERVED['/motd.txt']!), sha256(evil))
      .replace(/^[0-9a-f]{64}(?=  config\.yaml$)/m, sha256(readFileSync(join(dir, 'config.yaml'))));
    writeFileSync(join(dir, 'SHA256SUMS'), sums);
    const signed = await machineadm(['init', '--offline', '--bundle', dir, '--bundle-public-key-file', 'operator.pub', '--root', root], work);
    expect(signed.code).toBe(3);
    expect(signed.stderr).toContain('signature');
    expect(filesUnder(root)).toEqual([]);
    expect(minisign(['-Vm', 'SHA256SUMS', '-p', join(work, 'operator.pub')], dir).code).not.toBe(0);
  });

  it.each([
    ['a binary under bin/ that differs from its sum', (dir: string) => appendFileSync(join(dir, 'bin/machineadm-linux-x64'), 'x'), /bin\/machineadm-linux-x64 has sha256 [0-9a-f]{64}, but SHA256SUMS says/],
    ['a file added under bin/', (dir: string) => writeFileSync(join(dir, 'bin/kubeadm'), 'x'), /holds bin\/kubeadm, which SHA256SUMS does not list/],
    ['a listed file that is missing', (dir: string) => writeFileSync(join(dir, 'SHA256SUMS'), readFileSync(join(dir, 'SHA256SUMS'), 'utf8') + `${'0'.repeat(64)}  files/2-extra\n`), /files\/2-extra is missing \(SHA256SUMS lists it\)/],
    ['a manifest line naming a path outside the bundle', (dir: string) => writeFileSync(join(dir, 'SHA256SUMS'), readFileSync(join(dir, 'SHA256SUMS'), 'utf8') + `${'0'.repeat(64)}  ../etc/passwd\n`), /SHA256SUMS:\d+: not a line of sha256sum's format naming a file inside the bundle/],
  ])('refuses %s (exit 3)', async (_, change, message) => {
    const dir = copy();
    change(dir);
    const r = await machineadm(['plan', '--offline', '--bundle', dir, '--root', scratchDir()], work);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(message);
  });

  it('refuses an unsigned bundle when a public key is given (exit 3)', async () => {
    const dir = copy();
    spawnSync('rm', [join(dir, 'SHA256SUMS.minisig')]);
    const r = await machineadm(['plan', '--offline', '--bundle', dir, '--bundle-public-key-file', 'operator.pub', '--root', scratchDir()], work);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('is not signed: SHA256SUMS.minisig is missing');
  });

  it('refuses --bundle-public-key without --bundle (exit 2)', async () => {
    mkdirSync(join(work, 'empty'), { recursive: true });
    const r = await machineadm(['plan', '-c', 'node.yaml', '--bundle-public-key-file', 'operator.pub', '--root', scratchDir()], work);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--bundle-public-key and --bundle-public-key-file go with --bundle');
  });
});
