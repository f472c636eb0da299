// The runs kept for `status`: a bounded list in the state dir, one entry per finished run with
// what it changed, its result and its exit code, appended from the run's result document (so it
// holds no more than the events, which are scrubbed of secrets). A no-op rerun adds an entry
// instead of hiding what the run before it did.
import type { RootedFileSystem } from '../host/index.ts';
import type { ChangeInfo, Result } from '../engine/events.ts';
import { warningCount, type RunResultDocument } from './outcome.ts';

/** In the state dir. */
export const HISTORY_FILE = '/history.json';
/** Runs kept; the oldest goes first. */
export const HISTORY_LIMIT = 20;

export interface RunHistoryEntry {
  runId: string;
  command: string;
  result: Result | 'unfinished';
  exitCode: number | null;
  startedAt: string;
  finishedAt?: string;
  durationMs?: number;
  /** Steps that changed the machine, with what they changed. */
  changed: { step: string; changes: ChangeInfo[] }[];
  failedSteps: string[];
  warnings: number;
  error?: { message: string; stepId?: string };
}

interface HistoryDocument {
  kind: 'MachineadmRunHistory';
  version: 1;
  runs: RunHistoryEntry[];
}

export function historyEntry(doc: RunResultDocument): RunHistoryEntry {
  const steps = doc.phases.flatMap((p) => p.steps);
  return {
    runId: doc.runId,
    command: doc.command,
    result: doc.result ?? 'unfinished',
    exitCode: doc.exitCode ?? null,
    startedAt: doc.startedAt,
    ...(doc.finishedAt ? { finishedAt: doc.finishedAt } : {}),
    ...(doc.durationMs !== undefined ? { durationMs: doc.durationMs } : {}),
    changed: steps.filter((s) => (s.result === 'success' || s.result === 'warning') && s.changes?.length).map((s) => ({ step: s.id, changes: s.changes ?? [] })),
    failedSteps: doc.failedSteps,
    // As the run's summary counted them: a step that ended with a warning is one, logged or not.
    warnings: warningCount(doc),
    ...(doc.error ? { error: { message: doc.error.message, ...(doc.error.stepId ? { stepId: doc.error.stepId } : {}) } } : {}),
  };
}

/** A run worth showing by default: it changed something, warned, or did not end with exit code 0. */
export function isMeaningful(entry: RunHistoryEntry): boolean {
  return entry.changed.length > 0 || entry.warnings > 0 || entry.exitCode !== 0;
}

/** The kept runs, oldest first; an unreadable file counts as none (status must still answer). */
export async function readHistory(stateFs: RootedFileSystem): Promise<RunHistoryEntry[]> {
  const text = await stateFs.readText(HISTORY_FILE).catch(() => undefined);
  if (text === undefined) return [];
  try {
    const doc = JSON.parse(text) as Partial<HistoryDocument>;
    return Array.isArray(doc.runs) ? doc.runs.filter((r): r is RunHistoryEntry => typeof r?.runId === 'string' && Array.isArray(r.changed)) : [];
  } catch {
    return [];
  }
}

/** Adds the run (replacing an entry with its run id) and keeps the last `limit` runs. */
export async function appendHistory(stateFs: RootedFileSystem, doc: RunResultDocument, limit = HISTORY_LIMIT): Promise<void> {
  const runs = (await readHistory(stateFs)).filter((r) => r.runId !== doc.runId);
  runs.push(historyEntry(doc));
  // However many `report` runs follow them (a timer's), the last run that prepared or provisioned
  // the machine stays, and so does the last such run that did something, which status shows when
  // later runs did nothing; only runs of those commands age it out, as they did without reports.
  const preparing = runs.filter((r) => r.command !== 'report');
  const anchors = new Set([preparing.at(-1), preparing.slice(-limit).findLast(isMeaningful)].filter((r) => r !== undefined));
  const kept: RunHistoryEntry[] = [];
  for (let i = runs.length - 1; i >= 0; i--) {
    const older = [...anchors].filter((a) => runs.indexOf(a) < i).length;
    if (anchors.has(runs[i]!) || kept.length + older < limit) kept.unshift(runs[i]!);
  }
  const document: HistoryDocument = { kind: 'MachineadmRunHistory', version: 1, runs: kept };
  await stateFs.writeFile(HISTORY_FILE, JSON.stringify(document, null, 2) + '\n', { mode: 0o600, backup: false });
}
