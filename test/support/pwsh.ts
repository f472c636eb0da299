// Where PowerShell 7 and the Pester module are: MACHINEADM_PWSH and MACHINEADM_PESTER (exported by
// .ci/run), else where `dotnet tool install --global` and a NuGet restore put them. As with
// missingRequirement, a missing one skips with a printed reason on a developer's machine and
// throws in CI, where it means the install step is broken.
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { inCI } from './environment.ts';

export const PWSH_VERSION = '7.6.10';
export const PESTER_VERSION = '5.7.1';

export interface PowerShellTools {
  pwsh: string;
  pester: string;
}

function missing(reason: string): string {
  const text = `needs ${reason} (installed by .ci/run; see the README's Test section)`;
  if (inCI) throw new Error(`CI is missing a test dependency: ${text}`);
  console.warn(`skipping: ${text}`);
  return text;
}

/** The tools, or the reason the tests that need them skip (`need` says which ones are needed). */
export function findPowerShell(need: { pester?: boolean } = {}): PowerShellTools | { skip: string } {
  const pwsh = process.env.MACHINEADM_PWSH || join(homedir(), '.dotnet/tools/pwsh');
  const pester = process.env.MACHINEADM_PESTER || join(homedir(), `.nuget/packages/pester/${PESTER_VERSION}/tools/Pester.psd1`);
  const absent: string[] = [];
  if (!existsSync(pwsh)) absent.push(`PowerShell ${PWSH_VERSION} at ${pwsh}`);
  if (need.pester && !existsSync(pester)) absent.push(`Pester ${PESTER_VERSION} at ${pester}`);
  return absent.length ? { skip: missing(absent.join(' and ')) } : { pwsh, pester };
}

/** The Windows command-line tools the scripts run, stood in by test/windows/pester/native-tool.mjs. */
export const NATIVE_TOOLS = ['sc.exe', 'shutdown.exe', 'djoin.exe', 'containerd.exe', 'icacls.exe'];

/** A directory to put first on PATH where each native tool is the recording stand-in. */
export function nativeToolsDir(parent: string): string {
  const bin = join(parent, 'bin');
  mkdirSync(bin, { recursive: true });
  const tool = join(import.meta.dirname, '..', 'windows', 'pester', 'native-tool.mjs');
  for (const name of NATIVE_TOOLS) if (!existsSync(join(bin, name))) symlinkSync(tool, join(bin, name));
  return bin;
}
