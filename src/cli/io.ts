// What a command may use of the process it runs in. main() gets the real one; tests pass their own.
export interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Reads all of standard input (for -c -). */
  readStdin(): Promise<Buffer>;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** A real terminal with a known width: spinners and progress bars allowed. */
  interactive: boolean;
}

export function processIo(): Io {
  return {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks);
    },
    env: process.env,
    cwd: process.cwd(),
    // ora loops forever on a terminal that reports 0 columns.
    interactive: Boolean(process.stderr.isTTY && process.stderr.columns),
  };
}
