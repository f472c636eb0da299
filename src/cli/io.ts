// What a command may use of the process it runs in. main() gets the real one; tests pass their own.
export interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Reads standard input (for -c -), stopping with an error past maxBytes. */
  readStdin(maxBytes: number): Promise<Buffer>;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** A real terminal with a known width: spinners and progress bars allowed. */
  interactive: boolean;
}

export function processIo(): Io {
  return {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
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
    // ora loops forever on a terminal that reports 0 columns.
    interactive: Boolean(process.stderr.isTTY && process.stderr.columns),
  };
}
