// Process execution: execa with argv arrays only (never a shell string), a timeout on every call,
// output captured and optionally streamed line by line.
import * as nodePath from 'node:path';
import { access, constants } from 'node:fs/promises';
import { CommandError } from '../errors.ts';

export interface RunOptions {
  /** Milliseconds before the process is killed (SIGTERM, then SIGKILL after 5 s). Default 10 minutes. */
  timeoutMs?: number;
  input?: string | Uint8Array;
  /** Extra environment variables, added to machineadm's own. */
  env?: Record<string, string>;
  cwd?: string;
  /** Called with every output line as it arrives (for streaming kubeadm's output to the console). */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
  /** Return the result for a non-zero exit instead of throwing a CommandError. */
  allowFailure?: boolean;
}

export interface RunResult {
  argv: readonly string[];
  exitCode: number;
  stdout: string;
  stderr: string;
  durationMs: number;
}

export const TAIL_LINES = 50;

export function tail(text: string, lines = TAIL_LINES): string {
  const all = text.replace(/\n$/, '').split('\n');
  return all.slice(-lines).join('\n');
}

export class ProcessRunner {
  private readonly baseEnv: NodeJS.ProcessEnv;
  constructor(baseEnv: NodeJS.ProcessEnv = process.env) {
    this.baseEnv = baseEnv;
  }

  async run(argv: readonly [string, ...string[]], options: RunOptions = {}): Promise<RunResult> {
    const [file, ...args] = argv;
    // Loaded on first use: importing execa costs ~20 ms of startup that most commands never need.
    const { execa } = await import('execa');
    const started = Date.now();
    const subprocess = execa(file, args, {
      reject: false,
      timeout: options.timeoutMs ?? 10 * 60_000,
      forceKillAfterDelay: 5_000,
      input: options.input,
      env: { ...this.baseEnv, ...options.env },
      extendEnv: false,
      cwd: options.cwd,
      stripFinalNewline: false,
      all: false,
    });
    if (options.onLine) {
      const onLine = options.onLine;
      for (const name of ['stdout', 'stderr'] as const) {
        let buffered = '';
        subprocess[name]?.on('data', (chunk: Buffer) => {
          buffered += chunk.toString('utf8');
          const lines = buffered.split('\n');
          buffered = lines.pop() ?? '';
          for (const line of lines) onLine(line, name);
        });
        subprocess[name]?.on('end', () => {
          if (buffered) onLine(buffered, name);
        });
      }
    }
    const result = await subprocess;
    const stdout = String(result.stdout ?? '');
    const stderr = String(result.stderr ?? '');
    const durationMs = Date.now() - started;
    const exitCode = result.exitCode ?? -1;
    if (result.failed && (result.timedOut || result.exitCode === undefined || !options.allowFailure)) {
      const what = result.timedOut
        ? `timed out after ${options.timeoutMs ?? 600_000} ms`
        : result.exitCode === undefined
          ? `could not run (${result.code ?? result.signal ?? 'unknown error'})`
          : `exited with code ${result.exitCode}`;
      const tailText = tail(stderr || stdout, 5);
      throw new CommandError(`${argv.join(' ')} ${what}${tailText ? `: ${tailText}` : ''}`, {
        argv,
        exitCode: result.exitCode,
        stderrTail: tail(stderr),
        stdoutTail: tail(stdout),
        timedOut: result.timedOut,
      });
    }
    return { argv, exitCode, stdout, stderr, durationMs };
  }

  /** The full path of an executable on PATH, or undefined. */
  async which(name: string): Promise<string | undefined> {
    const pathVar = this.baseEnv.PATH ?? this.baseEnv.Path ?? '';
    const sep = process.platform === 'win32' ? ';' : ':';
    const exts = process.platform === 'win32' ? ['.exe', '.cmd', ''] : [''];
    for (const dir of pathVar.split(sep).filter(Boolean)) {
      for (const ext of exts) {
        const candidate = nodePath.join(dir, name + ext);
        try {
          await access(candidate, constants.X_OK);
          return candidate;
        } catch {
          // not here; try the next directory
        }
      }
    }
    return undefined;
  }
}
