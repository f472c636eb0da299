// How a run looks on the console: an ora spinner per step on a real terminal, plain timestamped
// lines otherwise (cloud-init logs, CI), JSON lines with -o json. Writes through the given
// functions only; the CLI decides where they go.
import type { EventBus, MachineEvent, Result } from './events.ts';

export type ConsoleMode = 'tty' | 'text' | 'json';

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
      return `${t} ${event.phase} ${event.result} ${formatDuration(event.durationMs ?? 0)}`;
    case 'step.finished':
      return `${t} ${event.step} ${event.result} ${formatDuration(event.durationMs ?? 0)}${stepNote(event)}`;
    case 'log':
      return `${t} ${event.step ?? 'machineadm'} ${event.level === 'warning' ? 'warning: ' : ''}${event.message ?? ''}`;
    case 'step.output':
      return `${t} ${event.step ?? ''} | ${event.message ?? ''}`;
    case 'run.finished':
      return `${t} machineadm ${event.command ?? ''} ${event.result} ${formatDuration(event.durationMs ?? 0)}`;
    default:
      return undefined;
  }
}

function stepNote(event: MachineEvent): string {
  if (event.result === 'failure') return `: ${event.error?.message ?? event.message ?? ''}`;
  if (event.message) return ` (${event.message})`;
  if (event.changes?.length) return ` (${event.changes.map((c) => `${c.action} ${c.target}`).join(', ')})`;
  return '';
}

const SYMBOL: Record<Result, 'succeed' | 'info' | 'warn' | 'fail'> = { success: 'succeed', skipped: 'info', warning: 'warn', failure: 'fail' };

/** Shows the bus's events on the console; returns a function that detaches it. */
export function attachConsole(bus: EventBus, mode: ConsoleMode, out: ConsoleOutput, spinnerFactory?: SpinnerFactory): () => void {
  if (mode === 'json') return bus.listen((event) => out.write(JSON.stringify(event) + '\n'));
  if (mode === 'text' || !spinnerFactory) {
    return bus.listen((event) => {
      if (event.type === 'step.started') return;
      const line = formatEventLine(event);
      if (line !== undefined) out.write(line + '\n');
    });
  }
  let spinner: Spinner | undefined;
  return bus.listen((event) => {
    switch (event.type) {
      case 'step.started':
        spinner = spinnerFactory().start(`${event.step} ${event.summary ?? ''}`);
        return;
      case 'step.finished': {
        const text = `${event.step} ${event.result} ${formatDuration(event.durationMs ?? 0)}${stepNote(event)}`;
        if (spinner) spinner[SYMBOL[event.result ?? 'success']](text);
        else out.write(text + '\n');
        spinner = undefined;
        return;
      }
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
      default:
        return;
    }
  });
}
