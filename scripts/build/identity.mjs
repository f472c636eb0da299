// What the binary says about its build: the version and commit it was built from, and the
// release public key built into it (from MACHINEADM_RELEASE_PUBKEY or MACHINEADM_RELEASE_PUBKEY_FILE).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { BuildError, ROOT } from './common.mjs';

export function gitCommit() {
  if (process.env.MACHINEADM_BUILD_COMMIT) return process.env.MACHINEADM_BUILD_COMMIT;
  try {
    const git = (args) => execFileSync('git', ['-C', ROOT, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const head = git(['rev-parse', 'HEAD']);
    // Only sources count: build outputs and caches are ignored by .gitignore anyway.
    const dirty = git(['status', '--porcelain', '--untracked-files=normal', '--', 'src', 'package.json', 'package-lock.json', 'scripts']) !== '';
    return dirty ? `${head}-dirty` : head;
  } catch {
    return 'unknown';
  }
}

/** The minisign public key line (base64 of "Ed" + key id + 32-byte key), or undefined. */
export function releasePublicKey(env = process.env) {
  let text = env.MACHINEADM_RELEASE_PUBKEY;
  let where = 'MACHINEADM_RELEASE_PUBKEY';
  if (!text && env.MACHINEADM_RELEASE_PUBKEY_FILE) {
    where = env.MACHINEADM_RELEASE_PUBKEY_FILE;
    try {
      text = readFileSync(env.MACHINEADM_RELEASE_PUBKEY_FILE, 'utf8');
    } catch (error) {
      throw new BuildError(`MACHINEADM_RELEASE_PUBKEY_FILE: cannot read ${where}: ${error.message}`);
    }
  }
  if (!text) return undefined;
  // A whole .pub file has an "untrusted comment:" line first; the key is the base64 line.
  const line = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l && !l.startsWith('untrusted comment:'))[0] ?? '';
  const bytes = Buffer.from(line, 'base64');
  if (!/^[A-Za-z0-9+/]+=*$/.test(line) || bytes.length !== 42 || bytes.subarray(0, 2).toString('latin1') !== 'Ed') {
    throw new BuildError(`${where}: not a minisign public key (expected the base64 line of a minisign .pub file, 56 characters starting with "RW")`);
  }
  return line;
}
