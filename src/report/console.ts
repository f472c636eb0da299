// How a run looks on the console: an ora spinner per step on a real terminal, plain timestamped
// lines otherwise (cloud-init logs, CI), JSON lines with -o json. Writes through the given
// functions only; the CLI decides where they go.
import { dump } from 'js-yaml';
import type { EventBus, MachineEvent, Result } from '../engine/events.ts';
import { countedSteps, warningCount, type RunResultDocument } from './outcome.ts';
import type { DeliveryReport } from './delivery.ts';
import { formatProgress } from '../host/transfer-progress.ts';
import { MAX_SPOOLED_EVENTS, UNREADABLE_SUFFIX } from './spool.ts';

export type ConsoleMode = 'tty' | 'text' | 'json' | 'yaml';

/** Modes whose output is data (one event per JSON line or YAML document), never prose. */
export function isDataMode(mode: ConsoleMode): mode is 'json' | 'yaml' {
  return mode === 'json' || mode === 'yaml';
}

export interface ConsoleOptions {
  /** 0 by default, 1 per -v: from 1 on, text mode also shows when each step starts. */
  verbosity?: number;
}

export interface ConsoleOutput {
  write(text: string): void;
}

interface Spinner {
  start(text: string): Spinner;
  stop(): Spinner;
  clear(): Spinner;
  render(): Spinner;
  succeed(text: string): Spinner;
  info(text: string): Spinner;
  warn(text: string): Spinner;
  fail(text: string): Spinner;
  /** What the spinner shows beside it (ora redraws it at its next frame). */
  text: string;
  stopAndPersist(options: { symbol: string; text: string }): Spinner;
}

export type SpinnerFactory = () => Spinner;

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  return `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`;
}

/** One plain line for an event, or undefined for events that are not shown in text mode. */
export function formatEventLine(event: MachineEvent): string | undefined {
  const t = event.time;
  switch (event.type) {
    case 'run.started':
      return `${t} machineadm ${event.command ?? ''} started (run ${event.runId})`;
    case 'phase.started':
      return `${t} ${event.phase} started: ${event.summary ?? ''}`;
    case 'phase.finished':
      return `${t} ${event.phase} ${phaseVerdict(event)} ${formatDuration(event.durationMs ?? 0)}`;
    case 'step.finished':
      return `${t} ${event.step} ${event.result} ${formatDuration(event.durationMs ?? 0)}${stepNote(event)}`;
    case 'log':
      return `${t} ${event.step ?? 'machineadm'} ${event.level === 'warning' ? 'warning: ' : ''}${event.message ?? ''}`;
    case 'step.output':
      return `${t} ${event.step ?? ''} | ${event.message ?? ''}`;
    case 'run.finished':
      return `${t} machineadm ${event.command ?? ''} ${event.result === 'skipped' ? 'done: nothing to do' : event.result} ${formatDuration(event.durationMs ?? 0)}`;
    default:
      return undefined;
  }
}

// A phase is "skipped" when none of its steps changed anything; saying so would read as if it had
// not run (the report phase then has still written its result file, at the end of the run).
function phaseVerdict(event: MachineEvent): string {
  if (event.result !== 'skipped') return event.result ?? '';
  return event.phase === 'report' ? 'done: no step changed anything (the result file is written at the end of the run)' : 'done: no step changed anything';
}

// A failure's message is not repeated here: the summary at the end of the run shows it once, with
// its hint and details.
function stepNote(event: MachineEvent): string {
  if (event.result === 'failure') return ' (the summary below says why)';
  if (event.message) return ` (${event.message})`;
  if (event.changes?.length) return ` (${event.changes.map((c) => `${c.action} ${c.target}`).join(', ')})`;
  return '';
}

/** The file a download goes to, by its name: the folder is in the plan. */
function shortTarget(path: string): string {
  return path.slice(Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\')) + 1);
}

const SYMBOL: Record<Result, 'succeed' | 'info' | 'warn' | 'fail'> = { success: 'succeed', skipped: 'info', warning: 'warn', failure: 'fail' };

/** Shows the bus's events on the console; returns a function that detaches it. */
export function attachConsole(bus: EventBus, mode: ConsoleMode, out: ConsoleOutput, spinnerFactory?: SpinnerFactory, options: ConsoleOptions = {}): () => void {
  if (mode === 'json') return bus.listen((event) => out.write(JSON.stringify(event) + '\n'));
  // A YAML stream: one document per event, each whole in one write.
  if (mode === 'yaml') return bus.listen((event) => out.write('---\n' + dump(event, { lineWidth: -1, noRefs: true })));
  if (mode === 'text' || !spinnerFactory) {
    return bus.listen((event) => {
      if (event.type === 'step.started') {
        if ((options.verbosity ?? 0) >= 1) out.write(`${event.time} ${event.step} started: ${event.summary ?? ''}\n`);
        return;
      }
      const line = formatEventLine(event);
      if (line !== undefined) out.write(line + '\n');
    });
  }
  let spinner: Spinner | undefined;
  let current: string | undefined;
  let summary = '';
  return bus.listen((event) => {
    switch (event.type) {
      case 'step.started':
        current = event.step;
        summary = event.summary ?? '';
        spinner = spinnerFactory().start(`${event.step} ${summary}`);
        return;
      case 'step.finished': {
        const text = `${event.step} ${event.result} ${formatDuration(event.durationMs ?? 0)}${stepNote(event)}`;
        if (spinner) spinner[SYMBOL[event.result ?? 'success']](text);
        else out.write(text + '\n');
        spinner = undefined;
        return;
      }
      case 'step.progress':
        // The running step's spinner says how far its download has come; the line stays one line.
        if (spinner && event.step === current && event.progress) spinner.text = `${current} ${summary}: ${shortTarget(event.progress.target)} ${formatProgress(event.progress)}`;
        return;
      case 'log':
      case 'step.output': {
        spinner?.clear();
        out.write(`  ${event.type === 'step.output' ? '| ' : ''}${event.message ?? ''}\n`);
        spinner?.render();
        return;
      }
      case 'phase.started':
        out.write(`${event.phase}: ${event.summary ?? ''}\n`);
        return;
      case 'run.finished':
        // A step that never finished (the runner stopped) must not leave a spinner turning.
        spinner?.stop();
        spinner = undefined;
        return;
      default:
        return;
    }
  });
}

const TAIL_LINES_SHOWN = 15;

function detailLines(details: Record<string, unknown>): string[] {
  const lines: string[] = [];
  for (const [key, value] of Object.entries(details)) {
    if (typeof value === 'string' && value.includes('\n')) {
      lines.push(`    ${key} (last lines):`, ...value.replace(/\n$/, '').split('\n').slice(-TAIL_LINES_SHOWN).map((l) => `      ${l}`));
    } else if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      lines.push(`    ${key}: ${String(value)}`);
    }
  }
  return lines;
}

/**
 * How the events went. `archived`: a reset archives the state directory with its spool, so what
 * is left there is never sent by a later run: said as unsent, with where it went.
 */
export function deliveryLines(delivery: DeliveryReport, archived = false): string[] {
  const lines: string[] = [];
  for (const e of delivery.endpoints) {
    if (e.unreadable) lines.push(`events: ${e.unreadable} spooled for ${e.url} could not be read (cut short, or not a CloudEvent): set aside in its spool folder as *${UNREADABLE_SUFFIX}, never sent`);
    if (e.dropped) lines.push(`events: the ${e.dropped} oldest unsent for ${e.url} were dropped: its spool keeps at most ${MAX_SPOOLED_EVENTS} (the endpoint has taken none for a long time; check its URL and that it is up)`);
    if (e.spooled === 0) {
      lines.push(`events: ${e.delivered} delivered to ${e.url}`);
    } else {
      const why = delivery.offline ? 'offline' : e.refused ? `refused: ${e.lastError ?? ''}; fix the endpoint or its credentials` : (e.lastError ?? 'not delivered before the deadline');
      lines.push(
        archived
          ? `events: ${e.delivered} delivered, ${e.spooled} unsent for ${e.url} (${why}); they stay in the archived state directory's spool, which no later run sends`
          : `events: ${e.delivered} delivered, ${e.spooled} kept in the spool for ${e.url} (${why}); "machineadm report" sends them`,
      );
    }
  }
  for (const o of delivery.orphaned) {
    lines.push(
      archived
        ? `events: ${o.events} unsent, spooled for an endpoint this reset's configuration does not name (spool/${o.key}); they stay in the archived state directory; give reset the configuration with that endpoint (-c) to send them first`
        : `events: ${o.events} spooled for an endpoint no longer configured (spool/${o.key}); kept, remove the directory if they are not wanted`,
    );
  }
  return lines;
}

/**
 * The end of a run in a few lines: the outcome, each failed step with its hint and attached data
 * (command and log tails), where the full result is, and how the events went.
 */
export function renderResultSummary(doc: RunResultDocument, notes: { resultFile?: string; problems?: string[] } = {}): string {
  // Counted as the run's result is: after a resume, the warning of the step that asked for the
  // reboot is answered, and saying it again would contradict the verdict.
  const steps = countedSteps(doc.phases);
  const by = (r: Result) => steps.filter((s) => s.result === r).length;
  // A run whose every step was skipped did not fail to run: it found nothing to do.
  const verdict = doc.exitCode === 4 ? 'reboot required' : doc.result === 'skipped' ? 'nothing to do' : (doc.result ?? 'unfinished');
  // Every warning the result file lists counts: a step that ended with one, and each warning the
  // run logged besides (the configuration's notes, a step's warning when it still succeeded).
  const warnedSteps = new Set(steps.filter((s) => s.result === 'warning').map((s) => s.id));
  const otherWarnings = (doc.warnings ?? []).filter((w) => !(w.step && warnedSteps.has(w.step)));
  const lines = [
    `machineadm ${doc.command}: ${verdict} in ${formatDuration(doc.durationMs ?? 0)} ` +
      `(${steps.length} steps: ${by('success')} changed, ${by('skipped')} skipped, ${warningCount(doc)} warnings, ${by('failure')} failed)`,
  ];
  for (const step of steps.filter((s) => s.result === 'failure' || s.result === 'warning')) {
    lines.push(`  ${step.result === 'failure' ? 'failed' : 'warning'}: ${step.id}: ${step.error?.message ?? step.message ?? ''}`);
    if (step.error?.hint) lines.push(`    what to do: ${step.error.hint}`);
    if (step.error?.details) lines.push(...detailLines(step.error.details));
  }
  for (const w of otherWarnings) lines.push(`  warning: ${w.step ? `${w.step}: ` : ''}${w.message}`);
  // A planned reboot (code 4) is not an error: the run goes on after it.
  if (doc.error && !doc.error.stepId && doc.failedSteps.length === 0) lines.push(`  ${doc.error.code === 4 ? 'reboot' : 'error'}: ${doc.error.message}`);
  const resultFile = notes.resultFile ?? '/run/machineadm/result.json';
  // Never a path to a file that is not there (the "could not write" line below says why). A run
  // can fail with no step failing (interrupted between steps): still a failure to look into.
  const written = !notes.problems?.some((p) => p.startsWith(`${resultFile}:`));
  const failed = doc.failedSteps.length > 0 || doc.result === 'failure';
  if (written && failed) lines.push(`  look at: ${resultFile} (or "machineadm status -o json") for every step's result and error`);
  else if (written) lines.push(`  result: ${resultFile} ("machineadm status" shows this and earlier runs)`);
  if (doc.delivery) lines.push(...deliveryLines(doc.delivery, doc.command === 'reset' && doc.exitCode === 0).map((l) => `  ${l}`));
  for (const p of notes.problems ?? []) lines.push(`  could not write ${p}`);
  return lines.join('\n') + '\n';
}
