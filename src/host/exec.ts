// Process execution: execa with argv arrays only (never a shell string), a hard timeout on every
// call, output captured and optionally streamed line by line. Every command runs in a process group
// of its own (Linux) so that a timeout or an interruption stops the whole tree it started, and
// nothing it left behind can keep machineadm waiting on a pipe.
import * as nodePath from 'node:path';
import { accessSync, constants, statSync } from 'node:fs';
import { CommandError } from '../errors.ts';

export interface RunOptions {
  /** Milliseconds before the process tree is stopped (TERM, then KILL after killGraceMs). Default 10 minutes. */
  timeoutMs?: number;
  /** Milliseconds between TERM and KILL when a command is stopped. Default 5 s. */
  killGraceMs?: number;
  input?: string | Uint8Array;
  /** Extra environment variables, added to machineadm's own. */
  env?: Record<string, string>;
  /** Variables of machineadm's own environment the command must not inherit (a secret read from one). */
  withoutEnv?: readonly string[];
  cwd?: string;
  /**
   * Called with every output line as it arrives (for streaming kubeadm's output to the console):
   * at most MAX_LINE_CHARS of it, and `chars`, the length of the whole line.
   */
  onLine?: (line: string, stream: 'stdout' | 'stderr', chars: number) => void;
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
const DEFAULT_TIMEOUT_MS = 10 * 60_000;
const DEFAULT_KILL_GRACE_MS = 5_000;
/** After KILL, how long a pipe held open by a process outside the group may keep us waiting. */
const PIPE_GRACE_MS = 1_000;
/** Output kept per stream: enough for any tail a report shows, bounded for a chatty command. */
const MAX_CAPTURE = 4 * 1024 * 1024;
/**
 * Characters of one line handed to onLine. The rest is counted, not kept: output without a newline
 * (a binary file sent to the terminal) would otherwise be held whole, and searched again for a
 * newline with every chunk, until it outgrew what a string can hold.
 */
export const MAX_LINE_CHARS = 64 * 1024;

export function tail(text: string, lines = TAIL_LINES): string {
  const all = text.replace(/\n$/, '').split('\n');
  return all.slice(-lines).join('\n');
}

function childEnv(base: NodeJS.ProcessEnv, options: RunOptions): NodeJS.ProcessEnv {
  const env = { ...base, ...options.env };
  for (const name of options.withoutEnv ?? []) delete env[name];
  return env;
}

type StopReason = 'timeout' | 'interrupted';

/** A command being run: stop() ends its whole process tree. */
interface Running {
  stop(reason: StopReason): void;
}

export class ProcessRunner {
  private readonly baseEnv: NodeJS.ProcessEnv;
  private readonly signal: AbortSignal | undefined;
  private readonly running = new Set<Running>();

  /** `signal` interrupts the run: every running command is stopped and no new one starts. */
  constructor(baseEnv: NodeJS.ProcessEnv = process.env, signal?: AbortSignal) {
    this.baseEnv = baseEnv;
    this.signal = signal;
    signal?.addEventListener('abort', () => {
      for (const r of this.running) r.stop('interrupted');
    }, { once: true });
  }

  async run(argv: readonly [string, ...string[]], options: RunOptions = {}): Promise<RunResult> {
    const [file, ...args] = argv;
    if (this.signal?.aborted) {
      throw new CommandError(`${argv.join(' ')} not started: machineadm was interrupted (${String(this.signal.reason)})`, { argv, interrupted: true });
    }
    // Loaded on first use: importing execa costs ~20 ms of startup that most commands never need.
    const { execa } = await import('execa');
    const started = performance.now();
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const graceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
    const windows = process.platform === 'win32';
    const subprocess = execa(file, args, {
      reject: false,
      // A new process group (session) on Linux: its pid names the whole tree it starts.
      detached: !windows,
      // Without a group of its own on Windows, execa's cleanup still ends it with machineadm.
      cleanup: windows,
      input: options.input,
      env: childEnv(this.baseEnv, options),
      extendEnv: false,
      cwd: options.cwd,
      buffer: false,
    });
    const output = { stdout: '', stderr: '' };
    for (const name of ['stdout', 'stderr'] as const) {
      // The line being read: its first MAX_LINE_CHARS, and how long it is so far.
      let partial = '';
      let partialChars = 0;
      let endsInCr = false;
      const stream = subprocess[name];
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        // Cut back only once twice the bound is held: cutting at every chunk copied the whole
        // capture each time (seconds of CPU for every hundred megabytes a command printed).
        output[name] += chunk;
        if (output[name].length > 2 * MAX_CAPTURE) output[name] = output[name].slice(-MAX_CAPTURE);
        const onLine = options.onLine;
        if (!onLine) return;
        for (let start = 0; ; ) {
          const end = chunk.indexOf('\n', start);
          const piece = end < 0 ? chunk.slice(start) : chunk.slice(start, end);
          if (partial.length < MAX_LINE_CHARS) partial += piece.slice(0, MAX_LINE_CHARS - partial.length);
          partialChars += piece.length;
          if (piece) endsInCr = piece.endsWith('\r');
          if (end < 0) break;
          // A line ended by CR LF (PowerShell, Windows tools) is the line without its CR.
          onLine(endsInCr && partialChars === partial.length ? partial.slice(0, -1) : partial, name, endsInCr ? partialChars - 1 : partialChars);
          partial = '';
          partialChars = 0;
          endsInCr = false;
          start = end + 1;
        }
      });
      stream?.on('end', () => {
        if (partialChars > 0 && options.onLine) options.onLine(partial, name, partialChars);
        partial = '';
        partialChars = 0;
        endsInCr = false;
      });
    }

    let stopped: StopReason | undefined;
    const timers: NodeJS.Timeout[] = [];
    let abandon: () => void = () => undefined;
    const abandoned = new Promise<undefined>((resolve) => (abandon = () => resolve(undefined)));
    const signalTree = (sig: 'SIGTERM' | 'SIGKILL'): void => {
      const pid = subprocess.pid;
      if (pid === undefined) return;
      try {
        if (windows) void execa('taskkill', ['/PID', String(pid), '/T', ...(sig === 'SIGKILL' ? ['/F'] : [])], { reject: false });
        else process.kill(-pid, sig);
      } catch {
        // The group is gone already.
      }
    };
    const running: Running = {
      stop(reason) {
        if (stopped) return;
        stopped = reason;
        signalTree('SIGTERM');
        timers.push(
          setTimeout(() => {
            signalTree('SIGKILL');
            // A process that left the group (a daemon) may still hold the pipes: stop reading them.
            timers.push(
              setTimeout(() => {
                subprocess.stdout?.destroy();
                subprocess.stderr?.destroy();
                abandon();
              }, PIPE_GRACE_MS),
            );
          }, graceMs),
        );
      },
    };
    this.running.add(running);
    timers.push(setTimeout(() => running.stop('timeout'), timeoutMs));
    let result;
    try {
      result = await Promise.race([subprocess, abandoned]);
    } finally {
      for (const t of timers) clearTimeout(t);
      this.running.delete(running);
    }
    // The leader exited; members of its group that outlived it must not linger after a stop.
    if (stopped) signalTree('SIGKILL');
    const stdout = output.stdout.slice(-MAX_CAPTURE);
    const stderr = output.stderr.slice(-MAX_CAPTURE);
    const durationMs = Math.round(performance.now() - started);
    const exitCode = result?.exitCode ?? -1;
    const couldNotRun = result !== undefined && result.exitCode === undefined && result.signal === undefined && !stopped;
    if (stopped || couldNotRun || result === undefined || result.exitCode === undefined || (result.failed && !options.allowFailure)) {
      const what =
        stopped === 'timeout'
          ? `timed out after ${timeoutMs} ms`
          : stopped === 'interrupted'
            ? `stopped: machineadm was interrupted (${String(this.signal?.reason)})`
            : result?.exitCode === undefined
              ? result?.signal
                ? `was killed by ${result.signal}`
                : `could not run (${result?.code ?? 'unknown error'})`
              : `exited with code ${result.exitCode}`;
      const tailText = tail(stderr || stdout, 5);
      throw new CommandError(`${argv.join(' ')} ${what}${tailText ? `: ${tailText}` : ''}`, {
        argv,
        ...(result?.exitCode !== undefined ? { exitCode: result.exitCode } : {}),
        ...(!stopped && result?.exitCode === undefined && result?.signal ? { signal: result.signal } : {}),
        stderrTail: tail(stderr),
        stdoutTail: tail(stdout),
        timedOut: stopped === 'timeout',
        interrupted: stopped === 'interrupted',
      });
    }
    return { argv, exitCode, stdout, stderr, durationMs };
  }

  /** The full path of an executable on PATH (or of one named by its absolute path), or undefined. */
  async which(name: string): Promise<string | undefined> {
    if (nodePath.isAbsolute(name)) {
      try {
        accessSync(name, constants.X_OK);
        return statSync(name).isFile() ? name : undefined;
      } catch {
        return undefined;
      }
    }
    // A few stat calls, made synchronously: the caller goes on at once (a probe that waited for the
    // event loop between every PATH entry would start its process only after the work around it).
    const pathVar = this.baseEnv.PATH ?? this.baseEnv.Path ?? '';
    const sep = process.platform === 'win32' ? ';' : ':';
    const exts = process.platform === 'win32' ? ['.exe', '.cmd', ''] : [''];
    for (const dir of pathVar.split(sep).filter(Boolean)) {
      for (const ext of exts) {
        const candidate = nodePath.join(dir, name + ext);
        try {
          // Most PATH entries lack the name: asked first without the error a missing path throws.
          if (!statSync(candidate, { throwIfNoEntry: false })) continue;
          accessSync(candidate, constants.X_OK);
          return candidate;
        } catch {
          // not here; try the next directory
        }
      }
    }
    return undefined;
  }
}
