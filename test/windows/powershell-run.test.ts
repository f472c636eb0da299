// Two Windows actions run for real in PowerShell 7 (pwsh), through powershellRunner and the real
// ProcessRunner, with the same arguments powershell.exe gets (-EncodedCommand, the secret on
// standard input). The Windows-only cmdlets they call are declared as functions with the real
// cmdlets' parameter names and types, so a misspelled or mistyped parameter fails to bind as it
// would on Windows; each records what it received in a file the test reads back.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CommandError } from '../../src/errors.ts';
import { ProcessRunner, type RunOptions, type RunResult } from '../../src/host/exec.ts';
import { powershellRunner, type ScriptRunner } from '../../src/host/windows/powershell.ts';
import { windowsScripts, type WindowsScript } from '../../src/host/windows/scripts.ts';
import { findPowerShell } from '../support/pwsh.ts';
import { scratchDir } from '../support/tmp.ts';

const tools = findPowerShell();
const skip = 'skip' in tools ? tools.skip : undefined;
const dir = scratchDir('machineadm-pwsh-run-');
const RECORD = join(dir, 'received.jsonl');

/** The runner's argv with pwsh in place of powershell.exe: every other argument as on Windows. */
class PwshProcessRunner extends ProcessRunner {
  argv: readonly string[] = [];
  override run(argv: readonly [string, ...string[]], options?: RunOptions): Promise<RunResult> {
    this.argv = argv;
    return super.run([(tools as { pwsh: string }).pwsh, ...argv.slice(1)], options);
  }
}

// Parameter names and types as the cmdlets declare them: Add-Computer (Windows PowerShell 5.1,
// parameter set Domain), Install-WindowsFeature (ServerManager), Enable-WindowsOptionalFeature
// (DISM). Each appends its bound parameters as one JSON line; STUB_BEHAVIOUR picks its answer.
const STUBS = String.raw`
# pwsh colours errors and shows them in its concise view; powershell.exe 5.1 writes plain text in
# the normal view, which is what machineadm decodes on Windows.
$PSStyle.OutputRendering = 'PlainText'
$ErrorView = 'NormalView'
function Write-Received([string]$Cmdlet, [hashtable]$Bound) {
  $copy = @{}
  foreach ($key in $Bound.Keys) {
    $value = $Bound[$key]
    if ($value -is [pscredential]) { $value = @{ user = $value.UserName; password = $value.GetNetworkCredential().Password; secure = $value.Password -is [securestring] } }
    elseif ($value -is [System.Management.Automation.SwitchParameter]) { $value = $value.IsPresent }
    elseif ($value -is [enum]) { $value = [string]$value }
    $copy[$key] = $value
  }
  Add-Content -LiteralPath $env:STUB_RECORD -Value (@{ cmdlet = $Cmdlet; bound = $copy } | ConvertTo-Json -Compress -Depth 4)
}
function Add-Computer {
  [CmdletBinding(DefaultParameterSetName = 'Domain', SupportsShouldProcess = $true)]
  param(
    [Parameter(ValueFromPipeline = $true)] [string[]]$ComputerName,
    [pscredential]$LocalCredential,
    [Parameter(ParameterSetName = 'Domain')] [pscredential]$UnjoinDomainCredential,
    [Parameter(ParameterSetName = 'Domain', Mandatory = $true)] [pscredential]$Credential,
    [Parameter(ParameterSetName = 'Domain', Mandatory = $true, Position = 0)] [Alias('DN', 'Domain')] [string]$DomainName,
    [Parameter(ParameterSetName = 'Domain')] [string]$OUPath,
    [Parameter(ParameterSetName = 'Domain')] [Alias('DC')] [string]$Server,
    [Parameter(ParameterSetName = 'Domain')] [switch]$Unsecure,
    # [Microsoft.PowerShell.Commands.JoinOptions] exists only in Windows PowerShell 5.1.
    [Parameter(ParameterSetName = 'Domain')] [string[]]$Options,
    [Parameter(ParameterSetName = 'Workgroup', Mandatory = $true, Position = 0)] [string]$WorkgroupName,
    [switch]$Restart,
    [switch]$PassThru,
    [string]$NewName,
    [switch]$Force
  )
  Write-Received 'Add-Computer' $PSBoundParameters
  if ($env:STUB_BEHAVIOUR -eq 'join-fails') {
    # As Add-Computer reports a failed join: an InvalidOperationException whose message ends
    # with the Win32 text of the code (here 1326, a wrong user name or password).
    $text = (New-Object System.ComponentModel.Win32Exception(1326)).Message
    $exception = New-Object System.InvalidOperationException("Computer 'NODE-01' failed to join domain '$DomainName' from its current workgroup 'WORKGROUP' with following error message: $text")
    $PSCmdlet.WriteError((New-Object System.Management.Automation.ErrorRecord($exception, 'FailToJoinDomainFromWorkgroup', 'OperationStopped', $DomainName)))
  }
}
if ($env:STUB_BEHAVIOUR -ne 'client') {
  function Install-WindowsFeature {
    [CmdletBinding(DefaultParameterSetName = 'Name')]
    param(
      [Parameter(ParameterSetName = 'Name', Mandatory = $true, Position = 0, ValueFromPipeline = $true)] [string[]]$Name,
      [switch]$Restart, [switch]$IncludeAllSubFeature, [switch]$IncludeManagementTools, [string[]]$Source,
      [string]$ComputerName, [pscredential]$Credential, [string]$LogPath, [string]$Vhd
    )
    Write-Received 'Install-WindowsFeature' $PSBoundParameters
    if ($env:STUB_BEHAVIOUR -eq 'install-fails') { return [pscustomobject]@{ Success = $false; RestartNeeded = 'No'; ExitCode = 'Failed' } }
    [pscustomobject]@{ Success = $true; RestartNeeded = 'Yes'; ExitCode = 'SuccessRestartRequired' }
  }
}
function Enable-WindowsOptionalFeature {
  [CmdletBinding()]
  param(
    [Parameter(Mandatory = $true, ValueFromPipelineByPropertyName = $true)] [string[]]$FeatureName,
    [string]$PackageName, [switch]$Online, [string]$Path, [switch]$All, [switch]$LimitAccess, [string[]]$Source,
    [switch]$NoRestart, [string]$WindowsDirectory, [string]$SystemDrive, [string]$LogPath, [string]$ScratchDirectory
  )
  Write-Received 'Enable-WindowsOptionalFeature' $PSBoundParameters
  [pscustomobject]@{ RestartNeeded = $true; Online = [bool]$Online }
}
`;

function withStubs(script: WindowsScript): WindowsScript {
  return { ...script, text: `${STUBS}\n${script.text}` };
}

function runner(behaviour: string): { run: ScriptRunner; proc: PwshProcessRunner } {
  const proc = new PwshProcessRunner({ ...process.env, STUB_RECORD: RECORD, STUB_BEHAVIOUR: behaviour });
  return { run: powershellRunner(proc), proc };
}

// pwsh's console host colours error lines with ANSI escapes, which powershell.exe 5.1 does not write.
const plain = (text: string): string => text.replace(/\x1b\[[0-9;]*m/g, '');

function received(): { cmdlet: string; bound: Record<string, unknown> }[] {
  return readFileSync(RECORD, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { cmdlet: string; bound: Record<string, unknown> });
}

const JOIN = { domain: 'corp.example', user: 'CORP\\k8s-joiner', ouPath: 'OU=Nodes,DC=corp,DC=example', newName: 'NODE-01', server: 'dc1.corp.example' };
// Non-ASCII and a quote: the hex on standard input must come back as these exact characters.
const PASSWORD = 'pä$$w’rd "x" ünïcødé 🔑';

describe.skipIf(skip)('Windows actions run by pwsh against declared cmdlets', () => {
  afterEach(() => rmSync(RECORD, { force: true }));

  it('domain.join gives Add-Computer the domain, OU, new name, server and a credential read from standard input, and prints joined', async () => {
    const { run, proc } = runner('join-succeeds');
    const out = await run(withStubs(windowsScripts.domainJoin(JOIN)), { input: `${Buffer.from(PASSWORD, 'utf8').toString('hex')}\n` });
    expect(out).toEqual({ joined: true });
    expect(received()).toEqual([
      {
        cmdlet: 'Add-Computer',
        bound: {
          DomainName: JOIN.domain, OUPath: JOIN.ouPath, NewName: JOIN.newName, Server: JOIN.server, Force: true,
          Credential: { user: JOIN.user, password: PASSWORD, secure: true },
          ErrorAction: 'Stop', WarningAction: 'SilentlyContinue',
        },
      },
    ]);
    // The password is never in the command line, only its hex on standard input.
    expect(proc.argv.slice(0, -1)).toEqual(['powershell.exe', '-NoProfile', '-NonInteractive', '-ExecutionPolicy', 'Bypass', '-EncodedCommand']);
    expect(Buffer.from(proc.argv.at(-1)!, 'base64').toString('utf16le')).not.toContain('pä');
  }, 30_000);

  it('domain.join leaves out the OU, new name and server when they are empty', async () => {
    const { run } = runner('join-succeeds');
    await run(withStubs(windowsScripts.domainJoin({ ...JOIN, ouPath: '', newName: '', server: '' })), { input: `${Buffer.from('p', 'utf8').toString('hex')}\n` });
    expect(Object.keys(received()[0]!.bound).sort()).toEqual(['Credential', 'DomainName', 'ErrorAction', 'Force', 'WarningAction']);
  }, 30_000);

  it('domain.join prints joined false with the Win32 code found in the message of a failed join', async () => {
    const { run } = runner('join-fails');
    const out = (await run(withStubs(windowsScripts.domainJoin(JOIN)), { input: `${Buffer.from(PASSWORD, 'utf8').toString('hex')}\n` })) as Record<string, unknown>;
    expect(out).toMatchObject({ joined: false, code: 1326 });
    expect(out.errorId).toMatch(/^FailToJoinDomainFromWorkgroup,/);
    expect(out.message).toContain(`failed to join domain '${JOIN.domain}'`);
  }, 30_000);

  it('domain.join without a password on standard input fails with exit code 1 and says so, before calling Add-Computer', async () => {
    const { run } = runner('join-succeeds');
    const error = await run(withStubs(windowsScripts.domainJoin(JOIN)), { input: '\n' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandError);
    expect((error as CommandError).commandExitCode).toBe(1);
    expect(plain((error as CommandError).message)).toMatch(/^Windows action domain\.join failed: domain\.join: no password on standard input\nAt line:/);
    expect(() => received()).toThrow(/ENOENT/);
  }, 30_000);

  it('feature.install on a server calls Install-WindowsFeature with the name alone and reports the restart it needs', async () => {
    const { run } = runner('server');
    expect(await run(withStubs(windowsScripts.featureInstall('Containers')))).toEqual({ restartNeeded: true });
    expect(received()).toEqual([{ cmdlet: 'Install-WindowsFeature', bound: { Name: ['Containers'] } }]);
  }, 30_000);

  it('feature.install on a client (no Install-WindowsFeature) enables the optional feature online, with its parents and no restart', async () => {
    const { run } = runner('client');
    expect(await run(withStubs(windowsScripts.featureInstall('Containers')))).toEqual({ restartNeeded: true });
    expect(received()).toEqual([{ cmdlet: 'Enable-WindowsOptionalFeature', bound: { FeatureName: ['Containers'], Online: true, All: true, NoRestart: true } }]);
  }, 30_000);

  it('feature.install fails with exit code 1 and the cmdlet\'s exit code when Install-WindowsFeature does not succeed', async () => {
    const { run } = runner('install-fails');
    const error = await run(withStubs(windowsScripts.featureInstall('Containers'))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandError);
    expect((error as CommandError).commandExitCode).toBe(1);
    expect(plain((error as CommandError).message)).toMatch(/^Windows action feature\.install failed: Install-WindowsFeature did not succeed: exit code Failed\nAt line:/);
  }, 30_000);
});
