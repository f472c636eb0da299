// Streaming HTTP downloads (got) into a PendingFile (download-copy.ts) that survive a flaky network:
// a broken connection resumes with Range, mirrors are tried in order, and a body shorter than its
// Content-Length is caught.
import type { IncomingHttpHeaders } from 'node:http';
import { finished } from 'node:stream/promises';
import { MachineadmError } from '../errors.ts';
import type { Host } from './index.ts';
import { displayUrl, isRetryableStatus } from './http.ts';
import { receivedBytesCollector } from './socket-memory.ts';
import { appendChunk, DownloadError, finishedCopy, freshCopy, writeFailed, type Copy, type DownloadOptions, type DownloadResult } from './download-copy.ts';
import { assertOnline, Broken, describeNetworkError, failureHint, getFollowing, throwIfInterrupted } from './download-request.ts';

/** Attempts per URL even when each one makes progress: a bound, not a retry policy. */
const MAX_ATTEMPTS = 100;

// A copy that cannot be resumed starts over in a new temporary file (a PendingFile only appends).
async function restart(copy: Copy, options: DownloadOptions): Promise<void> {
  await copy.pending.abort();
  Object.assign(copy, await freshCopy(options));
}

// The version a response is of: a strong ETag, else Last-Modified (a weak ETag cannot tell).
function validatorOf(headers: IncomingHttpHeaders): string | undefined {
  return headers.etag && !headers.etag.startsWith('W/') ? headers.etag : headers['last-modified'];
}

// A server that does not implement If-Range still answers 206, with the new version's validator:
// its bytes must not be appended to the old version's. Validators of different kinds (an ETag
// now, only a date before) cannot be compared; the total length then is the only check left.
function sameVersion(validator: string | undefined, headers: IncomingHttpHeaders): boolean {
  if (validator === undefined) return true;
  const now = validator.startsWith('"') ? (headers.etag?.startsWith('W/') ? undefined : headers.etag) : headers['last-modified'];
  return now === undefined || now === validator;
}

function parseContentRange(value: string | undefined): { start: number; total: number | undefined } | undefined {
  const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(value ?? '');
  if (!m) return undefined;
  return { start: Number(m[1]), total: m[3] === '*' ? undefined : Number(m[3]) };
}

// One request: appends what arrives to the copy. Returns when the whole file is there; throws
// Broken for a connection to retry (or not).
async function transfer(url: URL, copy: Copy, options: DownloadOptions): Promise<string> {
  const resuming = copy.received > 0;
  const headers: Record<string, string> = {};
  if (resuming) {
    headers.range = `bytes=${copy.received}-`;
    if (copy.validator) headers['if-range'] = copy.validator;
  }
  const { response, body, url: finalUrl } = await getFollowing(url, headers, options);
  const status = response.statusCode ?? 0;
  let expectedEnd: number | undefined;
  if (resuming && status === 206) {
    const range = parseContentRange(response.headers['content-range']);
    // Without a validator for If-Range, a changed total is the only sign that the file changed
    // between attempts; appending its tail to the old head would make a file nobody published.
    const changed = range?.total !== undefined && copy.total !== undefined && range.total !== copy.total;
    if (!range || range.start !== copy.received || changed) {
      body.destroy();
      await restart(copy, options);
      throw new Broken(`the server answered a resume with a different range (${response.headers['content-range'] ?? 'none'}); starting over`, true);
    }
    if (!sameVersion(copy.validator, response.headers)) {
      const began = copy.validator;
      body.destroy();
      await restart(copy, options);
      throw new Broken(`the server answered a resume with another version of the file (${validatorOf(response.headers)}; the download began with ${began}); starting over`, true);
    }
    expectedEnd = range.total ?? copy.total;
  } else if (status === 200) {
    if (resuming) await restart(copy, options);
    const length = response.headers['content-length'];
    copy.total = length !== undefined && /^\d+$/.test(length) ? Number(length) : undefined;
    copy.validator = validatorOf(response.headers);
    expectedEnd = copy.total;
  } else {
    body.destroy();
    if (resuming && status === 416) {
      await restart(copy, options);
      throw new Broken('the server refused to resume (HTTP 416); starting over', true);
    }
    throw new Broken(`HTTP ${status} ${response.statusMessage ?? ''}`.trim(), isRetryableStatus(status));
  }
  options.onProgress?.(copy.received, expectedEnd);
  const received = receivedBytesCollector();
  try {
    for await (const chunk of body) {
      received(chunk.length);
      copy.hash.update(chunk);
      copy.observer?.update(chunk);
      copy.received += chunk.length;
      if (expectedEnd !== undefined && copy.received > expectedEnd) {
        throw new Broken(`the server sent more than the ${expectedEnd} bytes it announced`, false);
      }
      appendChunk(copy.pending, chunk, options.destination);
      options.onProgress?.(copy.received, expectedEnd);
    }
  } catch (error) {
    body.destroy();
    throwIfInterrupted(options);
    if (error instanceof Broken || error instanceof MachineadmError) throw error;
    const d = describeNetworkError(error);
    const what = expectedEnd !== undefined ? `the server announced ${expectedEnd} bytes but the connection ended after ${copy.received}` : `connection broken after ${copy.received} bytes`;
    throw new Broken(`${what}: ${d.message}`, d.retry, { cause: error, certificate: d.certificate });
  }
  if (!response.complete || (expectedEnd !== undefined && copy.received !== expectedEnd)) {
    throw new Broken(
      expectedEnd !== undefined
        ? `the server announced ${expectedEnd} bytes but the connection ended after ${copy.received}`
        : `the connection ended before the response was complete (${copy.received} bytes)`,
      true,
    );
  }
  return finalUrl.toString();
}

/**
 * Downloads the first URL that works into a pending file at `destination` (on `fs`). Resolves with
 * the pending file still uncommitted: the caller checks the hash/signature, then commits or aborts.
 */
export async function download(host: Host, given: DownloadOptions): Promise<DownloadResult> {
  assertOnline(host, given.urls);
  const options: DownloadOptions = host.signal ? { ...given, signal: host.signal } : given;
  const failures: string[] = [];
  let certificate = false;
  let copy: Copy | undefined;
  try {
    for (const raw of options.urls) {
      const url = new URL(raw);
      await copy?.pending.abort();
      const current = await freshCopy(options);
      copy = current;
      let stalled = 0;
      const limit = options.attemptsWithoutProgress ?? 3;
      for (let attempt = 1; ; attempt++) {
        const before = current.received;
        try {
          const finalUrl = await transfer(url, current, options);
          // A write can fail after write() accepted it; ending here makes that a download failure
          // like any other write error, before anyone checks or commits the file.
          current.pending.stream.end();
          await finished(current.pending.stream).catch((error: unknown) => {
            throw writeFailed(options.destination, error);
          });
          return { ...finishedCopy(current), bytes: current.received, url: finalUrl, observer: current.observer };
        } catch (error) {
          if (!(error instanceof Broken)) throw error;
          stalled = current.received > before ? 0 : stalled + 1;
          // A connection that breaks again and again, a little further each time, also ends.
          const gaveUp = stalled >= limit ? ` (gave up after ${limit} attempts without progress)` : attempt >= MAX_ATTEMPTS ? ` (gave up after ${MAX_ATTEMPTS} attempts)` : '';
          if (!error.retry || gaveUp) {
            // Shown by displayUrl: a presigned URL's token must not reach events or logs.
            failures.push(`${displayUrl(raw)}: ${error.message}${error.retry ? gaveUp : ''}`);
            certificate ||= error.certificate;
            break;
          }
          await host.sleep(Math.min(200 * 2 ** stalled, 5000));
        }
      }
    }
  } catch (error) {
    await copy?.pending.abort();
    throw error;
  }
  await copy?.pending.abort();
  throw new DownloadError(`download failed from ${options.urls.length === 1 ? 'its only URL' : `all ${options.urls.length} URLs`}:\n  ${failures.join('\n  ')}`, {
    hint: failureHint(certificate),
  });
}
