import { describe, expect, it } from 'vitest';
import { attachConsole, formatDuration, type SpinnerFactory } from '../../src/report/console.ts';
import { EventBus } from '../../src/engine/events.ts';

function fakeSpinners(): { factory: SpinnerFactory; calls: string[] } {
  const calls: string[] = [];
  const factory: SpinnerFactory = () => {
    const spinner = {
      start: (t: string) => (calls.push(`start ${t}`), spinner),
      stop: () => (calls.push('stop'), spinner),
      clear: () => spinner,
      render: () => spinner,
      succeed: (t: string) => (calls.push(`succeed ${t}`), spinner),
      info: (t: string) => (calls.push(`info ${t}`), spinner),
      warn: (t: string) => (calls.push(`warn ${t}`), spinner),
      fail: (t: string) => (calls.push(`fail ${t}`), spinner),
      stopAndPersist: () => spinner,
    };
    return spinner;
  };
  return { factory, calls };
}

describe('the console on a terminal', () => {
  it('turns a spinner per step and ends it with the step result', () => {
    const bus = new EventBus();
    const { factory, calls } = fakeSpinners();
    let out = '';
    attachConsole(bus, 'tty', { write: (t) => (out += t) }, factory);
    bus.emit({ type: 'phase.started', phase: 'prepare', summary: 'kernel' });
    bus.emit({ type: 'step.started', step: 'prepare/a', summary: 'do a' });
    bus.emit({ type: 'step.finished', step: 'prepare/a', result: 'success', durationMs: 1200 });
    bus.emit({ type: 'step.started', step: 'prepare/b', summary: 'do b' });
    bus.emit({ type: 'step.finished', step: 'prepare/b', result: 'failure', durationMs: 5, error: { message: 'boom', code: 1 } });
    bus.emit({ type: 'step.started', step: 'prepare/c', summary: 'do c' });
    bus.emit({ type: 'run.finished', result: 'failure' });
    expect(calls).toEqual(['start prepare/a do a', 'succeed prepare/a success 1.2s', 'start prepare/b do b', 'fail prepare/b failure 5ms (the summary below says why)', 'start prepare/c do c', 'stop']);
    expect(out).toBe('prepare: kernel\n');
  });
});

describe('the console with -o json', () => {
  it('prints every event as one JSON line', () => {
    const bus = new EventBus();
    let out = '';
    attachConsole(bus, 'json', { write: (t) => (out += t) });
    bus.emit({ type: 'run.started', command: 'init' });
    bus.emit({ type: 'step.output', step: 'provision/join', message: '[preflight] ok' });
    const lines = out.trim().split('\n').map((l) => JSON.parse(l) as { type: string; id: string });
    expect(lines.map((l) => l.type)).toEqual(['run.started', 'step.output']);
    expect(lines[0]!.id).toBe(`${bus.runId}.000001`);
  });
});

describe('durations', () => {
  it.each([
    [0, '0ms'],
    [999, '999ms'],
    [1500, '1.5s'],
    [61_000, '1m1s'],
  ])('%i ms reads %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
