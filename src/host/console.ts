// The console of the process: its output written best effort, and whether it is a terminal, told
// without loading Node's streams where the descriptor itself can tell.
import { closeSync, fstatSync, openSync, writeSync } from 'node:fs';

/**
 * Console output is best effort: a reader that went away (`| head -1`, a closed terminal) must not
 * end a run that is changing the machine. After the first error the stream is left alone.
 * Off Windows the text is written to the descriptor directly, as Node's own stream for a file, a
 * pipe or a terminal does there (synchronously), without loading Node's streams (and for a pipe
 * its whole network stack) into every start. A descriptor that would block (one its reader made
 * non-blocking) hands the rest to the stream, which waits for it; so does Windows, where the
 * console needs Node's stream to show Unicode.
 */
export function bestEffort(fd: number, open: () => NodeJS.WriteStream): (text: string) => void {
  let stream: NodeJS.WriteStream | undefined;
  let direct = process.platform !== 'win32';
  let usable = true;
  return (text) => {
    if (!usable) return;
    let rest: string | Buffer = text;
    if (direct) {
      const bytes = Buffer.from(text, 'utf8');
      let written = 0;
      try {
        while (written < bytes.length) written += writeSync(fd, bytes, written);
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') {
          usable = false;
          return;
        }
        direct = false;
        rest = bytes.subarray(written);
      }
    }
    if (!stream) {
      stream = open();
      stream.on('error', () => {
        usable = false;
      });
    }
    try {
      stream.write(rest);
    } catch {
      usable = false;
    }
  };
}

/**
 * Whether the descriptor may be a terminal, told without opening Node's stream for it (which loads
 * Node's streams into the start): only a character device can be one, and never a memory device
 * (major 1: /dev/null, /dev/zero). On Windows only the stream can tell.
 */
function mayBeTerminal(fd: number): boolean {
  if (process.platform === 'win32') return true;
  try {
    const info = fstatSync(fd);
    // Linux's device numbers: the major's low 12 bits at bits 8-19, its high bits from bit 32.
    const major = ((info.rdev >>> 8) & 0xfff) | (Math.floor(info.rdev / 2 ** 32) & ~0xfff);
    return info.isCharacterDevice() && major !== 1;
  } catch {
    return false;
  }
}

/** Whether the stream is a terminal (whatever width it reports). */
export function isTerminal(stream: 'stdout' | 'stderr'): boolean {
  return mayBeTerminal(stream === 'stdout' ? 1 : 2) && process[stream].isTTY === true;
}

/** The stream's terminal width, undefined when it is not a terminal (or reports no width). */
export function terminalColumns(stream: 'stdout' | 'stderr'): number | undefined {
  if (!mayBeTerminal(stream === 'stdout' ? 1 : 2)) return undefined;
  const s = process[stream];
  return s.isTTY && s.columns ? s.columns : undefined;
}

/**
 * Whether standard output and standard error are one file (a terminal, `> log 2>&1`, `2>&1 | tee`):
 * then what is said on one need not be said again on the other.
 */
export function sameDestination(): boolean {
  try {
    const out = fstatSync(1);
    const err = fstatSync(2);
    return out.dev === err.dev && out.ino === err.ino && out.rdev === err.rdev;
  } catch {
    return false;
  }
}

/** An append-only log (--log-file): each write is one append (O_APPEND), whole lines at a time. */
export interface AppendLog {
  write(text: string): void;
  close(): void;
}

/**
 * Opens (creating it 0600: a log tells what the machine is) a file to append to. A log that
 * cannot be written any more is left alone: the run goes on, as with a closed console.
 */
export function openAppendLog(path: string): AppendLog {
  const fd = openSync(path, 'a', 0o600);
  let usable = true;
  return {
    write(text) {
      if (!usable) return;
      try {
        writeSync(fd, Buffer.from(text, 'utf8'));
      } catch {
        usable = false;
      }
    },
    close() {
      if (usable) closeSync(fd);
      usable = false;
    },
  };
}
