// Two Windows actions run for real in PowerShell 7 (pwsh), through powershellRunner and the real
// ProcessRunner, with the same arguments powershell.exe gets (-EncodedCommand, the secret on
// standard input). The Windows-only cmdlets they call are declared as functions with the real
// cmdlets' parameter names and types, so a misspelled or mistyped parameter fails to bind as it
// would on Windows; each records what it received in a file the test reads back.
import { readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CommandError, MachineadmError } from '../../src/errors.ts';
import { ProcessRunner, type RunOptions, type RunResult } from '../../src/host/exec.ts';
import { powershellArgv, powershellRunner, type ScriptRunner } from '../../src/host/windows/powershell.ts';
import { windowsCommandLine } from '../../src/host/windows/quote.ts';
import { windowsScripts, type WindowsScript } from '../../src/host/windows/scripts.ts';
import { psLiteral } from '../../src/host/windows/quote.ts';
import { findPowerShell, nativeToolsDir } from '../support/pwsh.ts';
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

// The cmdlets as test/windows/pester/windows-cmdlets.ps1 declares them (the real parameter names
// and types), answering as STUB_BEHAVIOUR says; each records its bound parameters in STUB_RECORD.
const CMDLETS = resolve(import.meta.dirname, 'pester', 'windows-cmdlets.ps1');
const STUBS = String.raw`
# pwsh colours errors and shows them in its concise view; powershell.exe 5.1 writes plain text in
# the normal view, which is what machineadm decodes on Windows.
$PSStyle.OutputRendering = 'PlainText'
$ErrorView = 'NormalView'
. ${psLiteral(CMDLETS)}
$global:StubAnswers = @{
  'Add-Computer' = {
    param($bound, $cmdlet)
    if ($env:STUB_BEHAVIOUR -eq 'join-fails') {
      # As Add-Computer reports a failed join: an InvalidOperationException whose message ends
      # with the Win32 text of the code (here 1326, a wrong user name or password).
      $text = (New-Object System.ComponentModel.Win32Exception(1326)).Message
      $exception = New-Object System.InvalidOperationException("Computer 'NODE-01' failed to join domain '$($bound.DomainName)' from its current workgroup 'WORKGROUP' with following error message: $text")
      $cmdlet.WriteError((New-Object System.Management.Automation.ErrorRecord($exception, 'FailToJoinDomainFromWorkgroup', 'OperationStopped', $bound.DomainName)))
    }
  }
  'Install-WindowsFeature' = {
    param($bound, $cmdlet)
    if ($env:STUB_BEHAVIOUR -eq 'install-fails') { return [pscustomobject]@{ Success = $false; RestartNeeded = 'No'; ExitCode = 'Failed' } }
    if ($env:STUB_BEHAVIOUR -eq 'install-writes-error') {
      # A non-terminating error, after which the cmdlet goes on and returns as if it had succeeded.
      $exception = New-Object System.InvalidOperationException('the servicing stack is busy')
      $cmdlet.WriteError((New-Object System.Management.Automation.ErrorRecord($exception, 'ServicingBusy', 'ResourceBusy', $bound.Name)))
    }
    [pscustomobject]@{ Success = $true; RestartNeeded = 'Yes'; ExitCode = 'SuccessRestartRequired' }
  }
  'Test-ComputerSecureChannel' = { $env:STUB_BEHAVIOUR -ne 'dc-unreachable' }
  'Remove-Computer' = {
    param($bound, $cmdlet)
    if ($env:STUB_BEHAVIOUR -eq 'leave-denied') {
      # As Remove-Computer reports a refused unjoin (FailToUnjoinDomain), here access denied (5).
      $text = (New-Object System.ComponentModel.Win32Exception(5)).Message
      $exception = New-Object System.InvalidOperationException("Failed to unjoin computer 'NODE-01' from domain 'corp.example' with the following error message: $text")
      $cmdlet.WriteError((New-Object System.Management.Automation.ErrorRecord($exception, 'FailToUnjoinDomain', 'OperationStopped', 'NODE-01')))
    }
  }
  'Enable-WindowsOptionalFeature' = { param($bound) [pscustomobject]@{ RestartNeeded = $true; Online = [bool]$bound.Online } }
}
# The resume task, with the description STUB_DESCRIPTION.
if ($env:STUB_BEHAVIOUR -eq 'resume') { $global:StubAnswers['Get-ScheduledTask'] = { [pscustomobject]@{ TaskName = 'resume'; Description = $env:STUB_DESCRIPTION } } }
# A client SKU has no ServerManager module.
if ($env:STUB_BEHAVIOUR -eq 'client') { Remove-Item -LiteralPath Function:\Install-WindowsFeature }
`;

function withStubs(script: WindowsScript): WindowsScript {
  return { ...script, text: `${STUBS}\n${script.text}` };
}

function runner(behaviour: string, env: Record<string, string> = {}): { run: ScriptRunner; proc: PwshProcessRunner } {
  const proc = new PwshProcessRunner({ ...process.env, STUB_RECORD: RECORD, STUB_BEHAVIOUR: behaviour, ...env });
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

describe('the command line of a Windows action', () => {
  it('is refused, naming the action, when Windows would not start it (32,766 characters), and nothing is run', async () => {
    // 8/3 characters of base64 a character of UTF-16 script: 12,000 characters fit, 12,300 do not.
    const fits = powershellArgv({ action: 'small', text: 'x'.repeat(12_000) } as WindowsScript);
    expect(windowsCommandLine(fits).length).toBeLessThanOrEqual(32_766);
    const ran: string[][] = [];
    const proc = { run: async (argv: string[]) => (ran.push(argv), { exitCode: 0, stdout: '{}', stderr: '' }) } as unknown as ProcessRunner;
    const error = await powershellRunner(proc)({ action: 'big', text: 'x'.repeat(12_300) } as WindowsScript).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MachineadmError);
    expect((error as Error).message).toMatch(/^Windows action big: its command line would be 32\d{3} characters, over the 32766 Windows allows \(a script of 12300 characters\); nothing was run$/);
    expect(ran).toEqual([]);
  });
});

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
  }, 120_000);

  it('domain.join leaves out the OU, new name and server when they are empty', async () => {
    const { run } = runner('join-succeeds');
    await run(withStubs(windowsScripts.domainJoin({ ...JOIN, ouPath: '', newName: '', server: '' })), { input: `${Buffer.from('p', 'utf8').toString('hex')}\n` });
    expect(Object.keys(received()[0]!.bound).sort()).toEqual(['Credential', 'DomainName', 'ErrorAction', 'Force', 'WarningAction']);
  }, 120_000);

  it('domain.join prints joined false with the Win32 code found in the message of a failed join', async () => {
    const { run } = runner('join-fails');
    const out = (await run(withStubs(windowsScripts.domainJoin(JOIN)), { input: `${Buffer.from(PASSWORD, 'utf8').toString('hex')}\n` })) as Record<string, unknown>;
    expect(out).toMatchObject({ joined: false, code: 1326 });
    expect(out.errorId).toMatch(/^FailToJoinDomainFromWorkgroup,/);
    expect(out.message).toContain(`failed to join domain '${JOIN.domain}'`);
  }, 120_000);

  it('domain.leave gives Remove-Computer a credential read from standard input, the workgroup and -Force (no -Restart), and prints left', async () => {
    const { run, proc } = runner('leave-succeeds');
    const out = await run(withStubs(windowsScripts.domainLeave({ user: JOIN.user, workgroup: 'WORKGROUP', server: '' })), { input: `${Buffer.from(PASSWORD, 'utf8').toString('hex')}\n` });
    expect(out).toEqual({ left: true, reachable: true });
    expect(received()).toEqual([
      { cmdlet: 'Test-ComputerSecureChannel', bound: { ErrorAction: 'Stop' } },
      { cmdlet: 'Remove-Computer', bound: { UnjoinDomainCredential: { user: JOIN.user, password: PASSWORD, secure: true }, WorkgroupName: 'WORKGROUP', Force: true, ErrorAction: 'Stop', WarningAction: 'SilentlyContinue' } },
    ]);
    expect(Buffer.from(proc.argv.at(-1)!, 'base64').toString('utf16le')).not.toContain('pä');
  }, 120_000);

  it('domain.leave names access denied (5) from Remove-Computer\'s message, and leaves nothing to Remove-Computer when no domain controller answers', async () => {
    const denied = (await runner('leave-denied').run(withStubs(windowsScripts.domainLeave({ user: JOIN.user, workgroup: 'WORKGROUP', server: JOIN.server })), { input: '70\n' })) as Record<string, unknown>;
    expect(denied).toMatchObject({ left: false, code: 5 });
    expect(denied.errorId).toMatch(/^FailToUnjoinDomain/);
    rmSync(RECORD, { force: true });
    const unreachable = await runner('dc-unreachable').run(withStubs(windowsScripts.domainLeave({ user: JOIN.user, workgroup: 'WORKGROUP', server: JOIN.server })), { input: '70\n' });
    expect(unreachable).toMatchObject({ left: false, reachable: false });
    expect(received().map((r) => r.cmdlet)).toEqual(['Test-ComputerSecureChannel']);
  }, 120_000);

  it('domain.join without a password on standard input fails with exit code 1 and says so, before calling Add-Computer', async () => {
    const { run } = runner('join-succeeds');
    const error = await run(withStubs(windowsScripts.domainJoin(JOIN)), { input: '\n' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandError);
    expect((error as CommandError).commandExitCode).toBe(1);
    expect(plain((error as CommandError).message)).toMatch(/^Windows action domain\.join failed: domain\.join: no password on standard input\nAt line:/);
    expect(() => received()).toThrow(/ENOENT/);
  }, 120_000);

  it('feature.install on a server calls Install-WindowsFeature with the name alone and reports the restart it needs', async () => {
    const { run } = runner('server');
    expect(await run(withStubs(windowsScripts.featureInstall('Containers')))).toEqual({ restartNeeded: true });
    expect(received()).toEqual([{ cmdlet: 'Install-WindowsFeature', bound: { Name: ['Containers'] } }]);
  }, 120_000);

  it('feature.install on a client (no Install-WindowsFeature) enables the optional feature online, with its parents and no restart', async () => {
    const { run } = runner('client');
    expect(await run(withStubs(windowsScripts.featureInstall('Containers')))).toEqual({ restartNeeded: true });
    expect(received()).toEqual([{ cmdlet: 'Enable-WindowsOptionalFeature', bound: { FeatureName: ['Containers'], Online: true, All: true, NoRestart: true } }]);
  }, 120_000);

  it('feature.install fails with exit code 1 and the cmdlet\'s exit code when Install-WindowsFeature does not succeed', async () => {
    const { run } = runner('install-fails');
    const error = await run(withStubs(windowsScripts.featureInstall('Containers'))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandError);
    expect((error as CommandError).commandExitCode).toBe(1);
    expect(plain((error as CommandError).message)).toMatch(/^Windows action feature\.install failed: Install-WindowsFeature did not succeed: exit code Failed\nAt line:/);
  }, 120_000);

  it('stops an action at a cmdlet\'s non-terminating error (the prelude\'s Stop), which without it would report success', async () => {
    const { run } = runner('install-writes-error');
    const script = windowsScripts.featureInstall('Containers');
    const error = await run(withStubs(script)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandError);
    expect((error as CommandError).commandExitCode).toBe(1);
    expect(plain((error as CommandError).message).split('\n')[0]).toBe('Windows action feature.install failed: Install-WindowsFeature : the servicing stack is busy');
    // The same script without the prelude's first line goes on past the error and says it installed.
    const withoutStop = { ...script, text: script.text.replace("$ErrorActionPreference = 'Stop'\n", '') };
    expect(withoutStop.text).not.toContain('Stop');
    await expect(run(withStubs(withoutStop))).resolves.toEqual({ restartNeeded: true });
  }, 120_000);

  // Through powershellRunner, each action fails as powershell.exe does on a terminating error:
  // exit code 1, the error's text on stderr, which the runner makes the message.
  const bin = nativeToolsDir(dir);
  const failing: [string, () => WindowsScript, string][] = [
    ['feature.query', () => windowsScripts.featureQuery('Containers'), 'Get-WindowsFeature is not stubbed in this test'],
    ['service.query', () => windowsScripts.serviceQuery('kubelet'), 'Get-CimInstance is not stubbed in this test'],
    ['service.create', () => windowsScripts.serviceCreate({ name: 'kubelet', displayName: 'kubelet', commandLine: 'C:\\k\\kubelet.exe', dependsOn: [] }), 'New-Service is not stubbed in this test'],
    ['service.configure', () => windowsScripts.serviceConfigure({ name: 'kubelet', displayName: 'Kubernetes kubelet', commandLine: 'C:\\k\\kubelet.exe', dependsOn: [] }), 'Get-CimInstance is not stubbed in this test'],
    ['service.start', () => windowsScripts.serviceStart('kubelet'), 'Get-Service is not stubbed in this test'],
    ['service.stop', () => windowsScripts.serviceStop('kubelet'), 'Get-Service is not stubbed in this test'],
    ['service.restart', () => windowsScripts.serviceRestart('kubelet'), 'Get-Service is not stubbed in this test'],
    ['containerd.register', () => windowsScripts.containerdRegister({ executable: join(bin, 'containerd.exe'), config: 'C:\\c.toml', logFile: 'C:\\c.log' }), 'containerd --register-service exited with code 3'],
    ['firewall.query', () => windowsScripts.firewallQuery('machineadm-kubelet'), 'Get-NetFirewallRule is not stubbed in this test'],
    ['firewall.add', () => windowsScripts.firewallAdd({ name: 'machineadm-kubelet', displayName: 'kubelet', protocol: 'TCP', localPort: 10250 }), 'Get-NetFirewallRule is not stubbed in this test'],
    ['acl.query', () => windowsScripts.aclQuery(dir), 'Get-Acl is not stubbed in this test'],
    ['computer-system', () => windowsScripts.computerSystem(), 'Get-CimInstance is not stubbed in this test'],
    ['boot-identity', () => windowsScripts.bootIdentity(), 'Get-CimInstance is not stubbed in this test'],
    ['resume.register', () => windowsScripts.resumeRegister({ taskName: 'resume', taskPath: '\\machineadm\\', execute: 'C:\\m.exe', argument: 'init', description: '[]' }), 'Register-ScheduledTask is not stubbed in this test'],
    ['resume.query', () => windowsScripts.resumeQuery({ taskName: 'resume', taskPath: '\\machineadm\\' }), 'Get-ScheduledTask is not stubbed in this test'],
    ['resume.remove', () => windowsScripts.resumeRemove({ taskName: 'resume', taskPath: '\\machineadm\\' }), 'Get-ScheduledTask is not stubbed in this test'],
    ['restart', () => windowsScripts.restart('machineadm: test'), 'shutdown.exe exited with code 3'],
    ['service.remove', () => windowsScripts.serviceRemove('kubelet'), 'Get-Service is not stubbed in this test'],
    ['acl.restore', () => windowsScripts.aclRestore({ path: dir, sddl: 'D:P(A;;FA;;;SY)' }), 'Get-Acl is not stubbed in this test'],
    ['firewall.remove', () => windowsScripts.firewallRemove('machineadm-kubelet'), 'Get-NetFirewallRule is not stubbed in this test'],
    ['domain.leave-local', () => windowsScripts.domainLeaveLocal('WORKGROUP'), 'Get-CimInstance is not stubbed in this test'],
  ];

  function nativeRunner(exit: number, stderr = ''): ScriptRunner {
    return powershellRunner(new PwshProcessRunner({ ...process.env, PATH: `${bin}:${process.env.PATH}`, NATIVE_RECORD: join(dir, 'native.jsonl'), NATIVE_EXIT: String(exit), NATIVE_STDERR: stderr, SystemRoot: 'C:\\Windows', STUB_BEHAVIOUR: 'none' }));
  }

  it.concurrent.each(failing)('%s fails with exit code 1 and the reason as its message', async (action, make, reason) => {
    const error = await nativeRunner(3)(withStubs(make())).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandError);
    expect((error as CommandError).commandExitCode).toBe(1);
    expect(plain((error as CommandError).message).split('\n')[0]).toBe(`Windows action ${action} failed: ${reason}`);
  }, 120_000);

  it('resume.query reads back a description with non-ASCII characters unchanged when standard output is in a legacy code page', async () => {
    // powershell.exe writes redirected standard output in the console's OEM code page (437, 850,
    // ...), not UTF-8; pwsh does the same in a locale with a single-byte character set.
    const argv = ['C:\\Users\\Zoë\\machineadm.exe', 'join', '--config', 'C:\\Users\\Zoë\\O’Brien 設定.yaml'];
    const { run } = runner('resume', { STUB_DESCRIPTION: JSON.stringify(argv), LANG: 'en_US.ISO-8859-1', LC_ALL: 'en_US.ISO-8859-1' });
    const out = (await run(withStubs(windowsScripts.resumeQuery({ taskName: 'resume', taskPath: '\\machineadm\\' })))) as { description: string };
    expect(JSON.parse(out.description)).toEqual(argv);
  }, 120_000);

  it('containerd.register, restart and domain.join-offline print their JSON line after the native tool succeeds', async () => {
    const run = nativeRunner(0);
    expect(await run(withStubs(windowsScripts.containerdRegister({ executable: join(bin, 'containerd.exe'), config: 'C:\\c.toml', logFile: 'C:\\c.log' })))).toEqual({});
    expect(await run(withStubs(windowsScripts.restart('machineadm: test')))).toEqual({});
    expect(await run(withStubs(windowsScripts.domainJoinOffline('C:\\blob.odj')))).toEqual({ joined: true, code: 0, message: '' });
  }, 120_000);

  it('domain.join-offline exits 0 and reports djoin\'s exit code and its stderr when djoin fails', async () => {
    const out = await nativeRunner(2, 'The system cannot find the file specified.')(withStubs(windowsScripts.domainJoinOffline('C:\\missing.odj')));
    expect(out).toMatchObject({ joined: false, code: 2 });
    expect((out as { message: string }).message.trim()).toBe('The system cannot find the file specified.');
  }, 120_000);
});
