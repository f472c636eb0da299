// What every part of the build shares: the repository root, the build's error, its log line and
// the sha256 of a file.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A failure the build explains itself: printed as its message, without a stack. */
export class BuildError extends Error {}

let quiet = false;
/** --quiet: no log lines (errors are still printed). */
export function setQuiet(value) {
  quiet = value;
}
export const log = (message) => {
  if (!quiet) process.stderr.write(`build: ${message}\n`);
};

export async function sha256File(path) {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}
