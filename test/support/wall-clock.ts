// A wall clock that a test can set, as a boot's first time sync does while machineadm runs: Date
// (new Date() and Date.now()) moves by what the test shifts it; the process's own clock
// (performance.now(), timers) does not. Undo with vi.unstubAllGlobals().
import { vi } from 'vitest';

export function stubWallClock(): { shift(ms: number): void } {
  const RealDate = Date;
  let offsetMs = 0;
  class SetClock extends RealDate {
    constructor(...args: ConstructorParameters<DateConstructor> | []) {
      super(...((args.length ? args : [RealDate.now() + offsetMs]) as [number]));
    }
    static override now(): number {
      return RealDate.now() + offsetMs;
    }
  }
  vi.stubGlobal('Date', SetClock);
  return { shift: (ms) => void (offsetMs += ms) };
}
