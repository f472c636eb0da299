// A file: URL (an air-gapped bundle's files) goes through the same checks as a download, so a
// local source is copied the way a download is written, only without the network.
import { finished } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { UsageError } from '../errors.ts';
import type { Host } from './index.ts';
import { appendChunk, DownloadError, finishedCopy, freshCopy, writeFailed, type DownloadOptions, type DownloadResult } from './download-copy.ts';

/**
 * A file on this machine (a file: URL, as an air-gapped bundle's configuration names its files)
 * copied into a pending file at `destination` exactly as a download is: hashed and observed while
 * copied, nothing at the destination until the caller has checked it and commits. Needs no network,
 * so --offline allows it. The source is a path on the machine machineadm runs on, not under --root.
 */
export async function copyLocal(host: Host, options: Omit<DownloadOptions, 'urls' | 'ca'> & { url: string }): Promise<DownloadResult> {
  let path: string;
  try {
    path = fileURLToPath(options.url);
  } catch {
    throw new UsageError(`"${options.url}" is not a file: URL of a local path`);
  }
  const info = await host.local.stat(path);
  if (!info || info.kind === 'directory') {
    throw new DownloadError(`${path} ${info ? 'is a directory' : 'does not exist'}`, { hint: 'copy the whole bundle directory, or fix the source path' });
  }
  const copy = await freshCopy({ ...options, urls: [] });
  try {
    for await (const block of host.local.readBlocks(path)) {
      copy.hash.update(block);
      copy.observer?.update(block);
      copy.received += block.length;
      // Written before the next block is read into the same buffer.
      appendChunk(copy.pending, block, options.destination);
      options.onProgress?.(copy.received, info.size);
    }
    copy.pending.stream.end();
    await finished(copy.pending.stream).catch((error: unknown) => {
      throw writeFailed(options.destination, error);
    });
  } catch (error) {
    await copy.pending.abort();
    throw error;
  }
  return { ...finishedCopy(copy), bytes: copy.received, url: options.url, observer: copy.observer };
}
