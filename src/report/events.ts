// The event model: every run, phase and step emits a start and a finish event. Steps and the
// runner emit; sinks (console, status file, CloudEvents endpoints) listen. Pure, no I/O.
import { randomUUID } from 'node:crypto';

export type Result = 'success' | 'skipped' | 'warning' | 'failure';

export const RESULT_ORDER: readonly Result[] = ['success', 'skipped', 'warning', 'failure'];

/** The worst of several results (a phase's result is the worst of its steps'). */
export function worstResult(results: Iterable<Result>): Result {
  let worst: Result = 'success';
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
  /** A skip reason, a log line or a line of command output. */
  message?: string;
  level?: 'info' | 'warning' | 'error';
  changes?: ChangeInfo[];
  error?: ErrorInfo;
}

export type EventInput = Omit<MachineEvent, 'id' | 'time' | 'runId'>;

export interface EventListener {
  (event: MachineEvent): void;
}

/** Assigns ids and times and hands every event to the listeners, in order. */
export class EventBus {
  readonly runId: string;
  private readonly listeners: EventListener[] = [];
  private readonly now: () => Date;
  private readonly scrub: <T>(value: T) => T;
  private seq = 0;

  /** scrub removes secret values from every event before any listener sees it. */
  constructor(options: { runId?: string; now?: () => Date; scrub?: <T>(value: T) => T } = {}) {
    this.runId = options.runId ?? randomUUID();
    this.now = options.now ?? (() => new Date());
    this.scrub = options.scrub ?? ((value) => value);
  }

  listen(listener: EventListener): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  emit(input: EventInput): MachineEvent {
    this.seq += 1;
    const event: MachineEvent = this.scrub({ id: `${this.runId}.${String(this.seq).padStart(6, '0')}`, time: this.now().toISOString(), runId: this.runId, ...input });
    for (const listener of this.listeners) listener(event);
    return event;
  }
}
