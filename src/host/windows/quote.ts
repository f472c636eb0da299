// User values reach PowerShell only as single-quoted (verbatim) literals. PowerShell reads five
// characters as a single quote (U+0027 and U+2018..U+201B); inside a verbatim string each one is
// escaped by writing that same character twice, as PowerShell's own code generator does
// (EscapeSingleQuotedStringContent). Escaping only the ASCII quote lets `O’Brien` end the literal.
// In a verbatim string `$`, backticks, `;` and newlines are plain characters.
import { UsageError } from '../../errors.ts';

const SINGLE_QUOTES = /['\u2018\u2019\u201A\u201B]/g;

export function psLiteral(value: string): string {
  // A NUL ends the command line Windows builds from the script; nothing legitimate carries one.
  if (value.includes('\0')) throw new UsageError('a value given to PowerShell contains a NUL character', { hint: 'remove the NUL character from the value' });
  return `'${value.replace(SINGLE_QUOTES, (q) => q + q)}'`;
}

/** A value as a PowerShell expression: strings as verbatim literals, lists as @(...), whole numbers and booleans as themselves. */
export type PsValue = string | number | boolean | readonly string[];

export function psValue(value: PsValue): string {
  if (typeof value === 'string') return psLiteral(value);
  if (typeof value === 'boolean') return value ? '$true' : '$false';
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new UsageError(`${value} is not a whole number`);
    return String(value);
  }
  return `@(${value.map(psLiteral).join(', ')})`;
}

/**
 * One Windows command line from an argument vector, quoted so that CommandLineToArgvW and the C
 * runtime read the same vector back: quotes around arguments with spaces, tabs or quotes;
 * backslashes doubled only before a quote.
 */
export function windowsCommandLine(argv: readonly string[]): string {
  return argv
    .map((arg) => {
      if (arg !== '' && !/[\s"]/.test(arg)) return arg;
      let out = '"';
      let slashes = 0;
      for (const ch of arg) {
        if (ch === '\\') {
          slashes++;
          continue;
        }
        out += ch === '"' ? '\\'.repeat(slashes * 2 + 1) + '"' : '\\'.repeat(slashes) + ch;
        slashes = 0;
      }
      return out + '\\'.repeat(slashes * 2) + '"';
    })
    .join(' ');
}

/** The longest command line CreateProcess takes: 32,767 characters with its terminating NUL. */
export const WINDOWS_COMMAND_LINE_MAX = 32_766;

/** Why Windows would not start this argument vector (its command line is too long), if so. */
export function windowsCommandLineProblem(argv: readonly string[]): string | undefined {
  const length = windowsCommandLine(argv).length;
  return length > WINDOWS_COMMAND_LINE_MAX ? `its command line would be ${length} characters, over the ${WINDOWS_COMMAND_LINE_MAX} Windows allows` : undefined;
}
