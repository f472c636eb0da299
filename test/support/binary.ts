// The packaged binary for tests that must run the real executable (self-verification,
// kill -9 of a running report, the shell loader). Built once per source state: the build is cached
// under .build/test-binaries/<hash of src/, package files, build script, target and release key>/, and a
// lock file keeps parallel test workers from building the same binary twice.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CACHE = join(REPO, '.build', 'test-binaries');
export type Target = 'linux-x64' | 'linux-arm64' | 'windows-x64';
const FILE_NAMES: Record<Target, string> = {
  'linux-x64': 'machineadm-linux-x64',
  'linux-arm64': 'machineadm-linux-arm64',
  'windows-x64': 'machineadm-windows-x64.exe',
};
/** Builds not used for this long are removed (each is ~120 MiB). */
const KEEP_UNUSED_MS = 20 * 60_000;
const LOCK_WAIT_MS = 5 * 60_000;

export interface BinaryOptions {
  /** The base64 line of a minisign public key to build in as the release key. */
  releasePublicKey?: string;
  /** linux-x64 (the default, runs here), linux-arm64 (runs under qemu-user) or windows-x64 (inspected only). */
  target?: Target;
}

const builds = new Map<string, Promise<string>>();

/** The path of a machineadm binary (linux-x64 unless told otherwise) built from the current sources. */
export async function builtBinary(options: BinaryOptions = {}): Promise<string> {
  const target = options.target ?? 'linux-x64';
  if (target === 'linux-x64' && (process.platform !== 'linux' || process.arch !== 'x64')) {
    throw new Error(`builtBinary() builds the linux-x64 binary to run it here; this is ${process.platform}-${process.arch}`);
  }
  const key = `${target}\0${options.releasePublicKey ?? ''}`;
  const earlier = await builds.get(key)?.catch(() => undefined);
  // Another test run may have pruned it since (it was not used for a while).
  if (earlier && existsSync(earlier)) return earlier;
  const build = sourceHash(key).then((hash) => cachedBuild(hash, target, options));
  builds.set(key, build);
  build.catch(() => builds.delete(key));
  return build;
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await fsp.readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

/** Everything the bundle is made from; a change to any of it means a new binary. */
async function sourceHash(targetAndKey: string): Promise<string> {
  const files = [
    ...(await filesUnder(join(REPO, 'src'))),
    join(REPO, 'package.json'),
    join(REPO, 'package-lock.json'),
    join(REPO, 'scripts', 'build.mjs'),
    ...(await filesUnder(join(REPO, 'scripts', 'build'))),
  ].sort();
  const hash = createHash('sha256');
  for (const file of files) {
    const content = await fsp.readFile(file).catch(() => undefined);
    if (content === undefined) continue;
    hash.update(`${relative(REPO, file)}\0${content.length}\0`).update(content);
  }
  hash.update(`target and release key\0${targetAndKey}`);
  return hash.digest('hex').slice(0, 20);
}

async function cachedBuild(hash: string, target: Target, options: BinaryOptions): Promise<string> {
  const dir = join(CACHE, hash);
  const binary = join(dir, FILE_NAMES[target]);
  if (existsSync(binary)) {
    await touch(dir);
    return binary;
  }
  await fsp.mkdir(CACHE, { recursive: true });
  const release = await acquireLock(join(CACHE, `${hash}.lock`));
  try {
    // Another worker may have built it while this one waited for the lock.
    if (existsSync(binary)) return binary;
    const staging = await fsp.mkdtemp(join(CACHE, `${hash}.staging-`));
    try {
      await runBuild(staging, target, options);
      await fsp.rename(staging, dir);
    } finally {
      await fsp.rm(staging, { recursive: true, force: true });
    }
    await removeUnused(hash);
    return binary;
  } finally {
    await release();
  }
}

function runBuild(outDir: string, target: Target, options: BinaryOptions): Promise<void> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.MACHINEADM_RELEASE_PUBKEY;
  delete env.MACHINEADM_RELEASE_PUBKEY_FILE;
  if (options.releasePublicKey) env.MACHINEADM_RELEASE_PUBKEY = options.releasePublicKey;
  return new Promise((resolvePromise, reject) => {
    // No compressed copies: ~80 s of CPU per binary that no test needs (the loader tests compress their own, faster).
    const child = spawn(process.execPath, [join(REPO, 'scripts', 'build.mjs'), '--targets', target, '--out-dir', outDir, '--quiet', '--no-compress'], {
      cwd: REPO,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolvePromise();
      else reject(new Error(`building the test binary failed (exit ${code}):\n${output}`));
    });
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** An exclusive lock file holding the owner's pid; a lock whose owner died is taken over. */
async function acquireLock(path: string): Promise<() => Promise<void>> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const handle = await fsp.open(path, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      return () => fsp.rm(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = Number(await fsp.readFile(path, 'utf8').catch(() => ''));
    // An empty file is a lock being written right now; only a named, dead owner is stale.
    if (owner > 0 && !alive(owner)) {
      await fsp.rm(path, { force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${path} (held by pid ${owner || 'unknown'}); remove it if no build is running`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function touch(dir: string): Promise<void> {
  const now = new Date();
  await fsp.utimes(dir, now, now).catch(() => undefined);
}

async function removeUnused(current: string): Promise<void> {
  const names = await fsp.readdir(CACHE).catch(() => [] as string[]);
  for (const name of names) {
    // Old builds, and staging directories of builds that were killed, alike.
    if (name === current || name.endsWith('.lock')) continue;
    const st = await fsp.stat(join(CACHE, name)).catch(() => undefined);
    if (st?.isDirectory() && Date.now() - st.mtimeMs > KEEP_UNUSED_MS) await fsp.rm(join(CACHE, name), { recursive: true, force: true });
  }
}
