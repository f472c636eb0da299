// How every Windows script is put together, so that no template ever has a user value spliced into
// its text: the prelude, then assignments of verbatim literals, then the constant body. Also the
// CIM lookup that several templates share.
import { psValue, type PsValue } from '../quote.ts';

export interface WindowsScript {
  /** The action, e.g. "feature.install"; also the golden file's name. */
  readonly action: string;
  readonly text: string;
  /** The user values the script carries, by variable name (tests check where they land). */
  readonly values: Readonly<Record<string, PsValue>>;
}

// The result is read back as UTF-8, but powershell.exe writes redirected output in the console's
// code page (OEM: 437, 850, ...), where a character outside ASCII in a result (a path under
// C:\Users\Zoë, a Win32 message in French) becomes "?" or a look-alike. Results are JSON, so
// those characters leave as \uXXXX escapes and only ASCII is printed (ConvertTo-AsciiJson).
const PRELUDE = String.raw`$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }`;

export function compose(action: string, body: string, values: Record<string, PsValue> = {}): WindowsScript {
  const assignments = Object.entries(values).map(([name, value]) => `$${name} = ${psValue(value)}`);
  return { action, text: [`# machineadm ${action}`, PRELUDE, ...assignments, body.trim(), ''].join('\n'), values };
}

// A CIM lookup of one object by name: the cmdlet reports a missing object as a non-terminating
// error of category ObjectNotFound ("No MSFT_... objects found"); any other error (access denied,
// the service down) must fail the script rather than read as "missing". -ErrorAction
// SilentlyContinue alone would silence both, and even a terminating error inside the call.
// [about_CommonParameters.md (-ErrorVariable); CIM cmdlets' ObjectNotFound]
export function lookup(variable: string, command: string): string {
  return [
    `$${variable} = ${command} -ErrorAction SilentlyContinue -ErrorVariable lookupErrors`,
    `$failed = @($lookupErrors | Where-Object { [string]$_.CategoryInfo.Category -ne 'ObjectNotFound' })`,
    'if ($failed.Count -gt 0) { throw $failed[0] }',
  ].join('\n');
}
