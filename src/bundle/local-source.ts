// A source on this machine (a file: URL, as a bundle's configuration names its files once loaded)
// is checked against its sha256 in preflight, before any step of the run writes anything: a file
// changed or cut short on its way to the machine fails the run with exit 3 and leaves the machine
// as it was. The step's own copy (verify/fetch.ts) checks the bytes again as it copies them.
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Host } from '../host/index.ts';
import { ConfigError, VerificationError } from '../errors.ts';

/** `field` is the source's path in the configuration (spec.files[1].source), named in the error. */
export async function checkLocalSource(host: Host, source: { url: string; sha256: string }, field: string): Promise<void> {
  const path = fileURLToPath(source.url);
  const info = await host.local.stat(path);
  if (!info || info.kind === 'directory') {
    throw new ConfigError([{ path: `${field}.url`, message: `${path} ${info ? 'is a directory' : 'does not exist'}`, hint: 'copy the whole bundle directory, or fix the source path' }]);
  }
  const hash = createHash('sha256');
  for await (const block of host.local.readBlocks(path)) hash.update(block);
  const sha = hash.digest('hex');
  if (sha !== source.sha256) {
    throw new VerificationError(`${field}.sha256: ${path}: SHA-256 is ${sha}, expected ${source.sha256}`, { hint: 'the file is not the one the configuration names: copy it again from the bundle, or rebuild the bundle' });
  }
}
