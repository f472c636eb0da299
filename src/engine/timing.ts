// Where a run's time goes: how long after the process started it began, and of each step's time how
// much the process spent waiting (the network, the disk, another process such as kubeadm) rather
// than working. Measured on the process itself (its clock and its event loop), never the machine.
import { performance } from 'node:perf_hooks';

/** Milliseconds since this process started (Node's time origin), rounded. */
export function sinceProcessStart(): number {
  return Math.round(performance.now());
}

/**
 * The milliseconds the process waited since it started (its event loop's idle time): of a run's own
 * start, the part spent waiting for the tool probes or the disk rather than working.
 */
export function waitedSinceProcessStart(): number {
  return Math.round(performance.eventLoopUtilization().idle);
}

/**
 * Starts measuring the event loop's idle time: the time the process had nothing to run and waited
 * for an answer. The function returned gives the milliseconds waited since the start, rounded.
 */
export function waitingMeter(): () => number {
  const start = performance.eventLoopUtilization();
  return () => Math.round(performance.eventLoopUtilization(start).idle);
}
