// Small files (a signature) read whole into memory, capped in size, and retried like a large
// download's, so that a signature is not the weak link on a first boot that races the network.
import type { Host } from './index.ts';
import { displayUrl, isRetryableStatus } from './http.ts';
import { DownloadError } from './download-copy.ts';
import { assertOnline, Broken, describeNetworkError, failureHint, getFollowing, throwIfInterrupted } from './download-request.ts';

// One request for a small file, read whole; throws Broken like transfer().
async function readSmall(url: URL, host: Host, options: { maxBytes: number; ca?: string; idleTimeoutMs?: number }): Promise<{ data: Buffer; url: string }> {
  // The run's signal too: an interrupted run must not wait for a quiet server's idle time.
  const request = { urls: [], fs: host.local, destination: '/', ...options, ...(host.signal ? { signal: host.signal } : {}) };
  const { response, body, url: finalUrl } = await getFollowing(url, {}, request);
  const status = response.statusCode ?? 0;
  if (status !== 200) {
    body.destroy();
    throw new Broken(`HTTP ${status} ${response.statusMessage ?? ''}`.trim(), isRetryableStatus(status));
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      size += chunk.length;
      if (size > options.maxBytes) {
        body.destroy();
        throw new Broken(`larger than ${options.maxBytes} bytes; not a signature file`, false);
      }
      chunks.push(chunk);
    }
  } catch (error) {
    body.destroy();
    throwIfInterrupted(request);
    if (error instanceof Broken) throw error;
    const d = describeNetworkError(error);
    throw new Broken(`connection broken: ${d.message}`, d.retry, { cause: error, certificate: d.certificate });
  }
  if (!response.complete) throw new Broken('the connection ended before the response was complete', true);
  return { data: Buffer.concat(chunks), url: finalUrl.toString() };
}

/**
 * Downloads a small file (a signature) into memory, refusing more than maxBytes. A failure that may
 * pass (network, 5xx) is retried like a large download's, so a signature is not the weak link on a
 * first boot that races the network.
 */
export async function downloadSmall(host: Host, urls: readonly string[], options: { maxBytes: number; ca?: string; idleTimeoutMs?: number; attempts?: number }): Promise<{ data: Buffer; url: string }> {
  assertOnline(host, urls);
  const failures: string[] = [];
  let certificate = false;
  const limit = options.attempts ?? 3;
  for (const raw of urls) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await readSmall(new URL(raw), host, options);
      } catch (error) {
        if (!(error instanceof Broken)) throw error;
        if (error.retry && attempt < limit) {
          await host.sleep(Math.min(200 * 2 ** attempt, 5000));
          continue;
        }
        failures.push(`${displayUrl(raw)}: ${error.message}${error.retry ? ` (gave up after ${limit} attempts)` : ''}`);
        certificate ||= error.certificate;
        break;
      }
    }
  }
  throw new DownloadError(`download failed:\n  ${failures.join('\n  ')}`, { hint: failureHint(certificate) });
}
