// The event model: every run, phase and step emits a start and a finish event. Steps and the
// runner emit; sinks (console, status file, CloudEvents endpoints) listen. Pure, no I/O.
import { randomUUID } from 'node:crypto';
import type { TransferProgress } from '../host/transfer-progress.ts';

export type Result = 'success' | 'skipped' | 'warning' | 'failure';

// Mildest first: "skipped" (nothing needed doing) is milder than "success" (something changed), so
// a phase is skipped only when every step in it was.
export const RESULT_ORDER: readonly Result[] = ['skipped', 'success', 'warning', 'failure'];

/** The worst of several results (a phase's result is the worst of its steps'; none: skipped). */
export function worstResult(results: Iterable<Result>): Result {
  let worst: Result = 'skipped';
  for (const r of results) if (RESULT_ORDER.indexOf(r) > RESULT_ORDER.indexOf(worst)) worst = r;
  return worst;
}

export type EventType =
  | 'run.started'
  | 'run.finished'
  | 'phase.started'
  | 'phase.finished'
  | 'step.started'
  | 'step.finished'
  | 'step.output'
  | 'step.progress'
  | 'log';

export interface ErrorInfo {
  message: string;
  /** machineadm exit code class: 1 step failed, 2 usage/config, 3 verification, 4 reboot. */
  code: number;
  stepId?: string;
  hint?: string;
  /** Data the failing step attached: command tail, kubeadm phase, ... */
  details?: Record<string, unknown>;
}

export interface ChangeInfo {
  action: string;
  target: string;
  detail?: string;
}

export interface MachineEvent {
  /** Unique and stable: receivers deduplicate by it. */
  id: string;
  type: EventType;
  time: string;
  runId: string;
  /** The command that started the run: init, prepare, ... */
  command?: string;
  phase?: string;
  step?: string;
  summary?: string;
  result?: Result;
  durationMs?: number;
  /**
   * step.finished and run.finished: of durationMs, how long the process waited (for the network,
   * the disk, another process) rather than worked; run.started: the same of sinceStartMs, the
   * process's own start (the tool probes, the disk).
   */
  waitingMs?: number;
  /**
   * step.finished of a step whose work began before its turn, when the run started (the downloads
   * of spec.files): when it began, in milliseconds since the machineadm process started.
   */
  earlyStartMs?: number;
  /** run.started, step.started and run.finished: milliseconds since the machineadm process started. */
  sinceStartMs?: number;
  /** A skip reason, a log line or a line of command output. */
  message?: string;
  level?: 'info' | 'warning' | 'error';
  changes?: ChangeInfo[];
  error?: ErrorInfo;
  /** step.finished of a step whose record is an outcome (the domain join): what it did or found. */
  record?: Record<string, unknown>;
  /** Where the result file keeps that record (e.g. domainJoin). */
  recordAs?: 'domainJoin';
  /** step.progress: how far a download of the step has come, at most once a second. */
  progress?: { target: string } & TransferProgress;
  /** Set when the event was cut to stay under the size limit (see limitEventSize). */
  truncated?: boolean;
}

/** Which machine and which build an event comes from (CloudEvent source and extensions, result files). */
export interface MachineIdentity {
  hostname: string;
  /** spec.kubernetes.node.name when set, else the hostname (what kubeadm registers the node as). */
  nodeName: string;
  /** The cloud instance id when the machine's metadata gave one (cloud-init's instance-id). */
  instanceId?: string;
  /** Fields of the configuration that took their value from the machine, with each value's source. */
  machineValues?: Array<{ field: string; reference: string; value: string; source: string }>;
  machineadmVersion: string;
  os?: string;
  arch?: string;
  /** Windows: the build number (20348) and the release it is (ltsc2022). */
  windowsBuild?: string;
  windowsRelease?: string;
}

/** Events stay under this size in JSON (the CloudEvent envelope adds well under 4 KiB, for 64 KiB in all). */
export const EVENT_SIZE_LIMIT = 60 * 1024;

const byteLength = (value: unknown): number => Buffer.byteLength(JSON.stringify(value), 'utf8');

// Output tails grow without bound (kubeadm, journal); they are cut first, keeping their last lines.
const TAIL_KEY = /tail$/i;

function cutMarker(removed: number, limit: number): string {
  return `[cut by machineadm: ${removed} bytes removed to keep the event under ${Math.round(limit / 1024)} KiB]`;
}

function cutHead(text: string, removeBytes: number, limit: number): string {
  const bytes = Buffer.from(text, 'utf8');
  let keep = bytes.subarray(Math.min(bytes.length, removeBytes)).toString('utf8').replace(/^\uFFFD+/, '');
  const newline = keep.indexOf('\n');
  if (newline >= 0 && newline < 200) keep = keep.slice(newline + 1);
  return `${cutMarker(bytes.length - Buffer.byteLength(keep), limit)}\n${keep}`;
}

function cutTail(text: string, removeBytes: number, limit: number): string {
  const bytes = Buffer.from(text, 'utf8');
  const keep = bytes.subarray(0, Math.max(0, bytes.length - removeBytes)).toString('utf8').replace(/\uFFFD+$/, '');
  return `${keep}\n${cutMarker(bytes.length - Buffer.byteLength(keep), limit)}`;
}

/** Every string in a JSON-like value, with a setter, longest first. */
function stringSlots(root: unknown): { key: string; value: string; set: (v: string) => void }[] {
  const slots: { key: string; value: string; set: (v: string) => void }[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach((v, i) => (typeof v === 'string' ? slots.push({ key: String(i), value: v, set: (x) => (node[i] = x) }) : walk(v)));
    } else if (node && typeof node === 'object') {
      const obj = node as Record<string, unknown>;
      for (const [k, v] of Object.entries(obj)) {
        if (typeof v === 'string') slots.push({ key: k, value: v, set: (x) => (obj[k] = x) });
        else walk(v);
      }
    }
  };
  walk(root);
  return slots.sort((a, b) => b.value.length - a.value.length);
}

/** Every list in a JSON-like value with more than one entry, largest in JSON first. */
function listSlots(root: unknown): unknown[][] {
  const lists: unknown[][] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      if (node.length > 1) lists.push(node);
      node.forEach(walk);
    } else if (node && typeof node === 'object') Object.values(node).forEach(walk);
  };
  walk(root);
  return lists.map((list) => ({ list, size: byteLength(list) })).sort((a, b) => b.size - a.size).map((l) => l.list);
}

/** The entry that ends a cut list: a change's shape for a list of changes, else the text. */
function cutEntry(first: unknown, removed: number, limit: number): unknown {
  const text = `[cut by machineadm: ${removed} more entries removed to keep the event under ${Math.round(limit / 1024)} KiB]`;
  const change = first as { action?: unknown; target?: unknown } | null;
  return typeof change === 'object' && change !== null && typeof change.action === 'string' && typeof change.target === 'string' ? { action: 'cut', target: text } : text;
}

/**
 * A copy of the event that fits in `limit` bytes of JSON: output tails in error.details are cut
 * first (keeping their ends), then any other long text (keeping its start), each with a marker,
 * then long lists of short entries (a step's changes to a thousand files) keep their first entries.
 */
export function limitEventSize<T extends object>(event: T, limit = EVENT_SIZE_LIMIT): T & { truncated?: boolean } {
  if (byteLength(event) <= limit) return event;
  const copy = structuredClone(event) as T & { truncated?: boolean; error?: ErrorInfo };
  copy.truncated = true;
  const details = copy.error?.details;
  for (let round = 0; round < 8; round++) {
    const excess = byteLength(copy) - limit;
    if (excess <= 0) return copy;
    // Every tail gives up its share, so each keeps its own last lines.
    const tails = stringSlots(details).filter((s) => TAIL_KEY.test(s.key) && s.value.length > 200);
    const total = tails.reduce((n, s) => n + Buffer.byteLength(s.value), 0);
    if (total === 0) break;
    // JSON escaping can make a byte cost more than one; cut with some margin.
    const want = excess + 256 * tails.length + 512;
    for (const slot of tails) {
      const size = Buffer.byteLength(slot.value);
      slot.set(cutHead(slot.value, Math.min(size, Math.ceil((size * want) / total)), limit));
    }
  }
  for (let round = 0; round < 8; round++) {
    const excess = byteLength(copy) - limit;
    if (excess <= 0) return copy;
    const slot = stringSlots(copy).find((s) => s.key !== 'id' && s.key !== 'time' && s.value.length > 200);
    if (!slot) break;
    slot.set(cutTail(slot.value, Math.min(Buffer.byteLength(slot.value), excess + 256), limit));
  }
  // Each list is cut once, at its end, with room for its marker entry.
  for (const list of listSlots(copy)) {
    const excess = byteLength(copy) - limit;
    if (excess <= 0) return copy;
    let freed = 0;
    let removed = 0;
    while (list.length > 1 && freed < excess + 256) {
      freed += byteLength(list.pop()) + 1;
      removed += 1;
    }
    list.push(cutEntry(list[0], removed, limit));
  }
  return copy;
}

export type EventInput = Omit<MachineEvent, 'id' | 'time' | 'runId'>;

export interface EventListener {
  (event: MachineEvent): void;
}

/** Assigns ids and times and hands every event to the listeners, in order. */
export class EventBus {
  private id: string | undefined;
  private readonly listeners: EventListener[] = [];
  private readonly now: () => Date;
  private readonly scrub: <T>(value: T) => T;
  /** The machine the events come from, when the CLI knows it (sinks put it on what they send). */
  readonly identity: MachineIdentity | undefined;
  private seq = 0;

  /** scrub removes secret values from every event before any listener sees it. */
  /** firstSeq continues a run's numbering (a run resumed after a reboot keeps its id). */
  constructor(options: { runId?: string; firstSeq?: number; now?: () => Date; scrub?: <T>(value: T) => T; identity?: MachineIdentity } = {}) {
    this.id = options.runId;
    this.seq = (options.firstSeq ?? 1) - 1;
    this.now = options.now ?? (() => new Date());
    this.scrub = options.scrub ?? ((value) => value);
    this.identity = options.identity;
  }

  /** Made when first asked for: a run that plans only emits nothing and needs none (node:crypto loads at its first use). */
  get runId(): string {
    return (this.id ??= randomUUID());
  }

  listen(listener: EventListener): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  /** How many events were emitted; the next one gets seq + 1. */
  get sequence(): number {
    return this.seq;
  }

  // The id is the run id (random per run) and a sequence number: unique, ordered within the run,
  // and kept by a spooled copy so a receiver can drop duplicates.
  emit(input: EventInput): MachineEvent {
    this.seq += 1;
    const event: MachineEvent = limitEventSize(this.scrub({ id: `${this.runId}.${String(this.seq).padStart(6, '0')}`, time: this.now().toISOString(), runId: this.runId, ...input }));
    for (const listener of this.listeners) listener(event);
    return event;
  }
}
