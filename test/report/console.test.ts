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
      set text(t: string) {
        calls.push(`text ${t}`);
      },
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

  it("shows the running step's download beside its spinner: bytes, rate and time left; another step's progress is not shown", () => {
    const bus = new EventBus();
    const { factory, calls } = fakeSpinners();
    attachConsole(bus, 'tty', { write: () => undefined }, factory);
    bus.emit({ type: 'step.started', step: 'prepare/files', summary: 'write files' });
    bus.emit({ type: 'step.progress', step: 'prepare/files', progress: { target: '/usr/local/bin/kubelet', receivedBytes: 12 * 1048576, totalBytes: 64 * 1048576, bytesPerSecond: 4 * 1048576, etaSeconds: 13 } });
    bus.emit({ type: 'step.progress', step: 'prepare/kubernetes/install', progress: { target: '/opt/bin/kubeadm', receivedBytes: 1, bytesPerSecond: 1 } });
    expect(calls).toEqual(['start prepare/files write files', 'text prepare/files write files: kubelet 12.0 of 64.0 MiB (18%), 4.0 MiB/s, 13 s left']);
  });
});

describe('the console in text mode', () => {
  it('prints no progress line (a log keeps what happened, not how fast)', () => {
    const bus = new EventBus();
    let out = '';
    attachConsole(bus, 'text', { write: (t) => (out += t) });
    bus.emit({ type: 'step.progress', step: 'prepare/files', progress: { target: '/x', receivedBytes: 1, bytesPerSecond: 1 } });
    expect(out).toBe('');
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
