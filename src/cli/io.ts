// What a command may use of the process it runs in. main() gets the real one; tests pass their own.
import { InterruptedError, type InterruptSignal } from '../errors.ts';
import { bestEffort, isTerminal, sameDestination, terminalColumns } from '../host/console.ts';

/** Signals asking machineadm to stop, while a run that must end cleanly goes on. */
export interface Interrupts {
  /** Aborted with an InterruptedError at the first SIGTERM, SIGINT or SIGHUP. */
  readonly signal: AbortSignal;
  /** Stops watching: signals take their default effect again. */
  dispose(): void;
}

export interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Reads standard input (for -c -), stopping with an error past maxBytes. */
  readStdin(maxBytes: number): Promise<Buffer>;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /**
   * Standard output and standard error are both a real terminal with a known width: spinners
   * allowed. (A spinner on a terminal while the output goes through a pipe, `| tee`, would mix its
   * frames into the terminal and leave the step lines out of the pipe.)
   */
  interactive: boolean;
  /** Whether the stream is a terminal (colours may be shown on it unless NO_COLOR is set). */
  isTerminal?(stream: 'stdout' | 'stderr'): boolean;
  /** Standard output and standard error are the same file or terminal (see sameDestination). */
  sameDestination?(): boolean;
  /** The width of the terminal the stream shows on; undefined when it is not a terminal. */
  terminalColumns?(stream: 'stdout' | 'stderr'): number | undefined;
  /** Starts watching for interrupting signals (absent where nothing can send one, as in tests). */
  watchInterrupts?(): Interrupts;
  /** The command line that starts this machineadm again (for the resume after a reboot). */
  self?: readonly string[];
}

// On Windows, closing the console window sends SIGHUP and Ctrl+Break SIGBREAK.
const WATCHED: readonly [NodeJS.Signals, InterruptSignal][] = [
  ['SIGTERM', 'SIGTERM'],
  ['SIGINT', 'SIGINT'],
  ['SIGHUP', 'SIGHUP'],
  ...(process.platform === 'win32' ? [['SIGBREAK', 'SIGINT'] as [NodeJS.Signals, InterruptSignal]] : []),
];

function watchProcessInterrupts(stderr: (text: string) => void): Interrupts {
  const controller = new AbortController();
  const handlers = WATCHED.map(([sig, name]) => {
    const handler = (): void => {
      if (controller.signal.aborted) {
        // A second signal: the operator insists. Its default action ends the process at once
        // (exit status 128 + n), with what the first one started left as it is.
        stderr(`machineadm: ${sig} again: exiting at once\n`);
        dispose();
        process.kill(process.pid, sig);
        return;
      }
      stderr(`machineadm: ${sig} received: stopping the running step, recording the run as interrupted (send it again to exit at once)\n`);
      controller.abort(new InterruptedError(name));
    };
    process.on(sig, handler);
    return [sig, handler] as const;
  });
  function dispose(): void {
    for (const [sig, handler] of handlers) process.off(sig, handler);
  }
  return { signal: controller.signal, dispose };
}

/** The real process; `self` is the command line that starts this machineadm again (see Io.self). */
export function processIo(self?: readonly string[]): Io {
  const stderr = bestEffort(2, () => process.stderr);
  return {
    stdout: bestEffort(1, () => process.stdout),
    stderr,
    readStdin: async (maxBytes) => {
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of process.stdin) {
        size += (chunk as Buffer).length;
        // Keep one byte over the limit so the caller can tell "too large" from "exactly the limit".
        if (size > maxBytes) {
          chunks.push((chunk as Buffer).subarray(0, (chunk as Buffer).length - (size - maxBytes - 1)));
          process.stdin.destroy();
          break;
        }
        chunks.push(chunk as Buffer);
      }
      return Buffer.concat(chunks);
    },
    env: process.env,
    cwd: process.cwd(),
    // ora loops forever on a terminal that reports 0 columns. Asked when a command needs it:
    // process.stderr loads Node's streams (see bestEffort).
    get interactive() {
      return terminalColumns('stderr') !== undefined && terminalColumns('stdout') !== undefined;
    },
    terminalColumns,
    isTerminal,
    sameDestination,
    watchInterrupts: () => watchProcessInterrupts(stderr),
    ...(self ? { self } : {}),
  };
}
