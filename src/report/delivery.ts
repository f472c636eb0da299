// The CloudEvents sink: every reported event is first written to each endpoint's spool (before the
// run goes on), then delivered in the background in spool order (older runs first), and its file
// removed once the endpoint answered 2xx. At the end the run waits for delivery at most
// report.deadlineSeconds; what is left stays spooled for the next run or `machineadm report`.
import type { RootedFileSystem } from '../host/index.ts';
import type { HttpPoster } from '../host/http-post.ts';
import { batchBody, CLOUDEVENT_BATCH_CONTENT_TYPE, CLOUDEVENT_CONTENT_TYPE, isReportedEvent, toCloudEvent } from './cloudevents.ts';
import type { MachineEvent, MachineIdentity } from '../engine/events.ts';
import type { ResolvedEndpoint } from './endpoints.ts';
import { EndpointSpool, isSpooledEvent, MAX_SPOOLED_EVENTS, nextRunStamp, spoolContents, spoolName } from './spool.ts';

export interface EndpointDelivery {
  url: string;
  /** Events the endpoint acknowledged during this run (older spooled ones included). */
  delivered: number;
  /** Events still in the spool for this endpoint. */
  spooled: number;
  /** The last failure, when delivery is behind. */
  lastError?: string;
  /** True when the endpoint refused in a way retrying cannot fix (a 4xx other than 408/429). */
  refused?: boolean;
  /** The oldest unsent events removed at the start of the run, the spool being full (MAX_SPOOLED_EVENTS). */
  dropped?: number;
  /** Spooled files that were not events (cut short, changed by hand), set aside unsent in this run. */
  unreadable?: number;
}

export interface DeliveryReport {
  endpoints: EndpointDelivery[];
  /** Spool directories of endpoints no longer in the configuration, kept untouched. */
  orphaned: { key: string; events: number }[];
  /** Events that could not be written to the spool (sent directly, if at all). */
  spoolErrors: string[];
  offline: boolean;
}

export interface ReporterOptions {
  endpoints: readonly ResolvedEndpoint[];
  identity: MachineIdentity;
  runId: string;
  stateFs: RootedFileSystem;
  poster: HttpPoster;
  /** --offline: events are spooled, never sent. */
  offline: boolean;
  /** How long finish() waits for delivery at most (report.deadlineSeconds). */
  deadlineMs: number;
  now?: () => number;
  random?: () => number;
  /** Most events in one batch request (batch endpoints). */
  maxBatch?: number;
}

/** The most a batch request's body takes, in bytes: a proxy's default body limit (nginx: 1 MiB). */
const MAX_BATCH_BYTES = 1024 * 1024;
// While the run goes on, a failing endpoint is retried after a pause (full jitter up to this).
const ROUND_BACKOFF = { baseMs: 500, capMs: 5_000 };

interface Queued {
  name: string;
  /** The CloudEvent as spooled; absent for older events, read from the spool when sent. */
  text?: string;
}

class EndpointQueue {
  readonly endpoint: ResolvedEndpoint;
  readonly spool: EndpointSpool;
  readonly queue: Queued[] = [];
  delivered = 0;
  dropped = 0;
  unreadable = 0;
  /** The most events a batch takes after a 413: halved at each, down to one. */
  batchLimit: number | undefined;
  lastError: string | undefined;
  refused = false;
  private wake: (() => void) | undefined;

  constructor(endpoint: ResolvedEndpoint, stateFs: RootedFileSystem) {
    this.endpoint = endpoint;
    this.spool = new EndpointSpool(stateFs, endpoint.key);
  }

  push(item: Queued): void {
    this.queue.push(item);
    this.poke();
  }

  poke(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /** Resolves at the next push or poke, after `ms`, or when `signal` aborts, whichever comes first. */
  wait(signal: AbortSignal, ms = Number.POSITIVE_INFINITY): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted || ms <= 0) return resolve();
      // A timer of more than 2^31 - 1 ms fires at once (Node warns each time): a collector's
      // Retry-After of weeks is waited out in turns of at most that, each ending in another wait.
      const timer = Number.isFinite(ms) ? setTimeout(done, Math.min(ms, MAX_TIMER_MS)) : undefined;
      function done(): void {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  }
}

const MAX_TIMER_MS = 2 ** 31 - 1;

/** An interruption that shortens the end-of-run wait: once `signal` aborts, at most `withinMs` more. */
export interface DeliveryCut {
  signal: AbortSignal;
  withinMs: number;
}

export class EventReporter {
  private readonly options: ReporterOptions;
  private readonly queues: EndpointQueue[];
  private readonly now: () => number;
  private readonly random: () => number;
  /** Aborted when the deadline passes: requests in flight and waits end at once. */
  private readonly stop = new AbortController();
  private closing = false;
  private deadline = Number.POSITIVE_INFINITY;
  private stamp = 0;
  private loops: Promise<void>[] = [];
  private readonly spoolErrors: string[] = [];

  constructor(options: ReporterOptions) {
    this.options = options;
    this.queues = options.endpoints.map((e) => new EndpointQueue(e, options.stateFs));
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
  }

  /** Prepares the spools and starts delivering what earlier runs left, oldest first. */
  async open(): Promise<void> {
    this.stamp = await nextRunStamp(this.options.stateFs, this.now());
    for (const q of this.queues) {
      await q.spool.open();
      // Before anything is sent, so no event in flight is removed (another machineadm's may be:
      // it then finds its file gone, which costs nothing).
      q.dropped = await q.spool.dropOldest(MAX_SPOOLED_EVENTS);
      for (const name of await q.spool.pending()) q.queue.push({ name });
    }
    if (!this.options.offline) this.loops = this.queues.map((q) => this.deliver(q));
  }

  /** The bus listener. Synchronous on purpose: the event is on disk before the run goes on. */
  readonly listener = (event: MachineEvent): void => {
    if (!isReportedEvent(event) || this.queues.length === 0) return;
    const text = JSON.stringify(toCloudEvent(event, this.options.identity));
    const seq = Number(event.id.slice(event.id.lastIndexOf('.') + 1));
    const name = spoolName(this.stamp, this.options.runId, seq);
    for (const q of this.queues) {
      try {
        q.spool.appendSync(name, text);
      } catch (error) {
        // A full or read-only disk must not stop the run; the event is still sent if the endpoint answers.
        if (this.spoolErrors.length < 5) this.spoolErrors.push(`${q.spool.dir}/${name}: ${(error as Error).message}`);
      }
      q.push({ name, text });
    }
  };

  /** Events not yet acknowledged, per endpoint still being tried (for a "waiting" note while finish() runs). */
  backlog(): { url: string; events: number }[] {
    return this.options.offline ? [] : this.queues.filter((q) => q.queue.length > 0 && !q.refused).map((q) => ({ url: q.endpoint.display, events: q.queue.length }));
  }

  /**
   * Waits for delivery up to the deadline (or a shorter one, after an interruption), then stops;
   * returns what was delivered and what is left. When `cut` aborts during the wait (a signal after
   * the run's last step), what is left of the wait shrinks to at most `cut.withinMs`.
   */
  async finish(deadlineMs = this.options.deadlineMs, cut?: DeliveryCut): Promise<DeliveryReport> {
    this.closing = true;
    this.deadline = this.now() + deadlineMs;
    let timer = setTimeout(() => this.stop.abort(), deadlineMs);
    const shorten = (): void => {
      const left = Math.max(0, Math.min(this.deadline - this.now(), cut!.withinMs));
      this.deadline = this.now() + left;
      clearTimeout(timer);
      timer = setTimeout(() => this.stop.abort(), left);
      // A loop waiting out a Retry-After that now ends past the deadline stops at once.
      for (const q of this.queues) q.poke();
    };
    if (cut?.signal.aborted) shorten();
    else cut?.signal.addEventListener('abort', shorten, { once: true });
    for (const q of this.queues) q.poke();
    try {
      await Promise.all(this.loops);
    } finally {
      clearTimeout(timer);
      cut?.signal.removeEventListener('abort', shorten);
      this.stop.abort();
      this.options.poster.close();
    }
    const configured = new Set(this.queues.map((q) => q.endpoint.key));
    const orphaned = (await spoolContents(this.options.stateFs).catch(() => [])).filter((s) => !configured.has(s.key) && s.events > 0);
    const endpoints: EndpointDelivery[] = [];
    for (const q of this.queues) {
      const spooled = (await q.spool.pending().catch(() => [])).length;
      endpoints.push({
        url: q.endpoint.display,
        delivered: q.delivered,
        spooled,
        ...(spooled > 0 && q.lastError ? { lastError: q.lastError } : {}),
        ...(q.refused ? { refused: true } : {}),
        ...(q.dropped > 0 ? { dropped: q.dropped } : {}),
        ...(q.unreadable > 0 ? { unreadable: q.unreadable } : {}),
      });
    }
    return { endpoints, orphaned, spoolErrors: this.spoolErrors, offline: this.options.offline };
  }

  private async deliver(q: EndpointQueue): Promise<void> {
    const { poster } = this.options;
    const signal = this.stop.signal;
    let failures = 0;
    // Nothing is sent before this: the pause after a failure, or what the collector's Retry-After asked.
    let resumeAt = 0;
    // What the collector's Retry-After asked alone: past the deadline, nothing more can be sent.
    let heldUntil = 0;
    while (!signal.aborted) {
      // The collector takes nothing before the deadline: the events stay spooled, and the run ends
      // now instead of waiting for a deadline it knows will pass.
      if (this.closing && heldUntil >= this.deadline && this.now() < heldUntil) return;
      // A pause of its own paces the attempts while the run goes on; at its end the post's own
      // retries take over until the deadline, so only the collector's Retry-After still holds.
      // finish() pokes, so a wait begun during the run is measured again.
      const due = this.closing ? heldUntil : resumeAt;
      if (this.now() < due) {
        await q.wait(signal, due - this.now());
        continue;
      }
      if (q.queue.length === 0) {
        if (this.closing) return;
        await q.wait(signal);
        continue;
      }
      const batch = await this.take(q);
      if (batch.items.length === 0) continue;
      const body = q.endpoint.batch ? batchBody(batch.texts) : batch.texts[0]!;
      const outcome = await poster.post({
        url: q.endpoint.url,
        body,
        headers: { ...q.endpoint.headers, 'content-type': q.endpoint.batch ? CLOUDEVENT_BATCH_CONTENT_TYPE : CLOUDEVENT_CONTENT_TYPE },
        tls: q.endpoint.tls,
        // While the run goes on there is no hurry; at the end, the run's deadline bounds everything.
        deadline: this.closing ? this.deadline : this.now() + 60_000,
        // While the run goes on, one attempt: the pause before the next is this loop's, which
        // finish() can cut short (a wait inside post() would outlast a deadline it cannot know).
        maxAttempts: this.closing ? 8 : 1,
        signal,
      });
      if (outcome.ok) {
        failures = 0;
        for (const item of batch.items) await q.spool.remove(item.name).catch(() => undefined);
        q.queue.splice(0, batch.items.length);
        q.delivered += batch.items.length;
        q.lastError = undefined;
        continue;
      }
      // "Not tried: the deadline passed" says less than the failure before it.
      if (outcome.attempts > 0 || !q.lastError) q.lastError = outcome.reason;
      // A body limit below machineadm's (a proxy's client_max_body_size): smaller batches, down to
      // one event, which the collector either takes or refuses for good.
      if (!outcome.ok && outcome.status === 413 && batch.items.length > 1) {
        q.batchLimit = Math.max(1, Math.floor(batch.items.length / 2));
        continue;
      }
      if (!outcome.retryable) {
        // Retrying cannot help (401, 400, ...): keep the events for `machineadm report` after a fix.
        q.refused = true;
        return;
      }
      if (this.closing && this.now() >= this.deadline) return;
      failures += 1;
      const pause = Math.floor(this.random() * Math.min(ROUND_BACKOFF.capMs, ROUND_BACKOFF.baseMs * 2 ** Math.min(failures, 10)));
      heldUntil = outcome.retryAt ?? 0;
      resumeAt = Math.max(this.now() + pause, heldUntil);
    }
  }

  /** The next events to send, in order: one, or as many as a batch takes; events gone from the spool are dropped. */
  private async take(q: EndpointQueue): Promise<{ items: Queued[]; texts: string[] }> {
    const max = q.endpoint.batch ? Math.min(this.options.maxBatch ?? 100, q.batchLimit ?? Infinity) : 1;
    const items: Queued[] = [];
    const texts: string[] = [];
    // The opening bracket; each text adds its comma or the closing bracket.
    let bytes = 1;
    for (let i = 0; i < q.queue.length && items.length < max; i++) {
      const item = q.queue[i]!;
      const text = item.text ?? (await q.spool.read(item.name).catch(() => undefined));
      if (text === undefined) {
        // Delivered and removed by another machineadm process in the meantime.
        q.queue.splice(i, 1);
        i -= 1;
        continue;
      }
      // Texts in memory are this run's own; a file may have been cut short (a disk fault) or edited.
      if (item.text === undefined && !isSpooledEvent(text)) {
        await q.spool.setAside(item.name).catch(() => undefined);
        q.unreadable += 1;
        q.queue.splice(i, 1);
        i -= 1;
        continue;
      }
      // In UTF-8 bytes as sent, with the array's brackets and commas: text beyond ASCII takes more
      // bytes than characters.
      const size = Buffer.byteLength(text, 'utf8') + 1;
      if (items.length > 0 && bytes + size > MAX_BATCH_BYTES) break;
      items.push(item);
      texts.push(text);
      bytes += size;
    }
    return { items, texts };
  }
}
