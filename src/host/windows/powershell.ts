// Runs a script with Windows PowerShell 5.1: `powershell.exe -NoProfile -NonInteractive
// -ExecutionPolicy Bypass -EncodedCommand <base64 of the UTF-16LE text>` through the ProcessRunner
// (an argv array; no shell). The script text travels encoded, so no quoting of the command line
// can change it. With -EncodedCommand, no console and a redirected stderr, powershell.exe writes
// errors as serialized objects after a `#< CLIXML` line; they are decoded into plain messages.
import type { ProcessRunner } from '../exec.ts';
import { CommandError, ExitCode, MachineadmError } from '../../errors.ts';
import { windowsCommandLineProblem } from './quote.ts';
import type { WindowsScript } from './scripts.ts';

export const POWERSHELL = 'powershell.exe';
const TIMEOUT_MS = 10 * 60_000;

export function encodeCommand(text: string): string {
  return Buffer.from(text, 'utf16le').toString('base64');
}

export function powershellArgv(script: WindowsScript): [string, ...string[]] {
  const argv: [string, ...string[]] = [POWERSHELL, '-NoProfile', '-NonInteractive', '-ExecutionPolicy', 'Bypass', '-EncodedCommand', encodeCommand(script.text)];
  // The script travels on the command line (UTF-16 in base64: 8/3 characters a character of it).
  const tooLong = windowsCommandLineProblem(argv);
  if (tooLong) {
    throw new MachineadmError(`Windows action ${script.action}: ${tooLong} (a script of ${script.text.length} characters); nothing was run`, ExitCode.stepFailed, {
      hint: 'give this action less to do in one run: fewer or shorter values in the configuration it is made from (host agents and their arguments, labels, firewall rules)',
    });
  }
  return argv;
}

const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** `_x000D__x000A_` is how PowerShell's serializer writes characters XML cannot hold. */
function unescapeClixml(text: string): string {
  return text
    .replace(/&(amp|lt|gt|quot|apos|#(\d+)|#x([0-9a-fA-F]+));/g, (_, name: string, dec?: string, hex?: string) =>
      dec ? String.fromCodePoint(Number(dec)) : hex ? String.fromCodePoint(parseInt(hex, 16)) : XML_ENTITIES[name]!,
    )
    .replace(/_x([0-9A-Fa-f]{4})_/g, (_, code: string) => String.fromCharCode(parseInt(code, 16)));
}

/**
 * The error text in a `#< CLIXML` stderr: every `<S S="Error">` string, unescaped, joined into
 * lines (progress records and other streams are left out). Other stderr is returned unchanged.
 */
export function decodeClixml(stderr: string): string {
  const start = stderr.indexOf('#< CLIXML');
  if (start < 0) return stderr.trim();
  const before = stderr.slice(0, start).trim();
  const parts = [...stderr.slice(start).matchAll(/<S S="Error">([\s\S]*?)<\/S>/g)].map((m) => unescapeClixml(m[1]!));
  const text = parts.join('').replace(/\r\n/g, '\n').split('\n').map((l) => l.trimEnd()).filter(Boolean).join('\n');
  return [before, text].filter(Boolean).join('\n');
}

/** `input` is the script's standard input, read with $input (the one way a secret reaches a script). */
export type ScriptRunner = (script: WindowsScript, options?: { input?: string }) => Promise<unknown>;

/** Runs scripts through powershell.exe and returns the parsed JSON line each one prints. */
export function powershellRunner(proc: ProcessRunner): ScriptRunner {
  return async (script, options = {}) => {
    const result = await proc.run(powershellArgv(script), { timeoutMs: TIMEOUT_MS, allowFailure: true, ...(options.input !== undefined ? { input: options.input } : {}) });
    if (result.exitCode !== 0) {
      const message = decodeClixml(result.stderr) || result.stdout.trim() || `exit code ${result.exitCode}`;
      throw new CommandError(`Windows action ${script.action} failed: ${message}`, { argv: [POWERSHELL, '-EncodedCommand', `<${script.action}>`], exitCode: result.exitCode, stderrTail: message });
    }
    const line = result.stdout.trim().split(/\r?\n/).pop() ?? '';
    try {
      return JSON.parse(line) as unknown;
    } catch {
      throw new CommandError(`Windows action ${script.action} printed no JSON result: ${line.slice(0, 200)}`, { argv: [POWERSHELL, '-EncodedCommand', `<${script.action}>`], exitCode: 0 });
    }
  };
}
