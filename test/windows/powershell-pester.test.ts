// Every Windows action's script, run by PowerShell 7 under Pester (test/windows/pester/
// windows-actions.Tests.ps1): the Windows-only cmdlets are Pester mocks of declarations with their
// real parameters, the native tools executables on PATH that record their arguments. This file
// writes the scripts as src/host/windows/scripts.ts makes them, runs Invoke-Pester once and reads
// every test's result; it also checks that no action is left without a test of its own.
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { windowsScripts } from '../../src/host/windows/scripts.ts';
import { findPowerShell, nativeToolsDir } from '../support/pwsh.ts';
import { scratchDir } from '../support/tmp.ts';

const HERE = resolve(import.meta.dirname, 'pester');
const tools = findPowerShell({ pester: true });
const skip = 'skip' in tools ? tools.skip : undefined;
const dir = scratchDir('machineadm-pester-');
const bin = nativeToolsDir(dir);
/** A directory whose name holds a Unicode quote: it must reach the cmdlets as written. */
const ACL_PATH = join(dir, 'kubelet O’Brien');
/** Markup in a value given to the task definition: it must stay text. */
const MARKUP = 'a & b </Arguments></Exec><Exec><Command>evil.exe</Command> <![CDATA[x]]> "q" \'s\'';

/** The scripts the Pester file runs, by key (an action, or an action and a variant). */
function scripts(): Record<string, string> {
  const s = windowsScripts;
  const service = { name: 'kubelet', displayName: 'Kubernetes kubelet', commandLine: '"C:\\k\\kube let.exe" --windows-service --node-labels=a=O’Brien', dependsOn: ['containerd', 'csi-proxy'] };
  const task = { taskName: 'resume', taskPath: '\\machineadm\\' };
  const description = JSON.stringify(['C:\\Program Files\\machineadm\\machineadm.exe', 'init']);
  return {
    'feature.query': s.featureQuery('Containers').text,
    'feature.install': s.featureInstall('Containers').text,
    'service.query': s.serviceQuery('kubelet').text,
    'service.create': s.serviceCreate(service).text,
    'service.create.nodeps': s.serviceCreate({ ...service, dependsOn: [] }).text,
    'service.configure': s.serviceConfigure({ name: 'kubelet', displayName: 'Kubernetes kubelet', commandLine: 'C:\\k\\kubelet.exe --v=2', dependsOn: ['containerd'] }).text,
    'service.start': s.serviceStart('kubelet').text,
    'service.stop': s.serviceStop('kubelet').text,
    'service.restart': s.serviceRestart('kubelet').text,
    'containerd.register': s.containerdRegister({ executable: join(bin, 'containerd.exe'), config: 'C:\\Program Files\\containerd\\config.toml', logFile: 'C:\\ProgramData\\containerd\\containerd.log' }).text,
    'firewall.query': s.firewallQuery('machineadm-kubelet').text,
    'firewall.add': s.firewallAdd({ name: 'machineadm-kubelet', displayName: 'kubelet (machineadm)', protocol: 'TCP', localPort: 10250 }).text,
    'acl.private-directory': s.privateDirectory(ACL_PATH).text,
    'acl.query': s.aclQuery(ACL_PATH).text,
    'acl.query.missing': s.aclQuery(join(dir, 'missing')).text,
    'acl.path': ACL_PATH,
    'acl.restore': s.aclRestore({ path: 'C:\\k', sddl: 'O:BAG:SYD:AI(A;OICIID;FA;;;SY)(A;OICIID;FA;;;BA)(A;ID;0x1301bf;;;AU)' }).text,
    'computer-system': s.computerSystem().text,
    'boot-identity': s.bootIdentity().text,
    // The registration runs `machineadm resume`, which reads the command from the state directory.
    'resume.register': s.resumeRegister({ ...task, execute: 'C:\\Program Files\\machineadm\\machineadm.exe', argument: 'resume --state-dir C:\\ProgramData\\machineadm --root C:\\', description }).text,
    'resume.register.markup': s.resumeRegister({ ...task, execute: 'C:\\m.exe', argument: MARKUP, description }).text,
    'resume.markup': MARKUP,
    'resume.description': description,
    'resume.query': s.resumeQuery(task).text,
    'resume.remove': s.resumeRemove(task).text,
    'service.remove': s.serviceRemove('kubelet').text,
    'firewall.remove': s.firewallRemove('machineadm-kubelet').text,
    'domain.leave': s.domainLeave({ user: 'CORP\\k8s-joiner', workgroup: 'WORKGROUP', server: 'dc1.corp.example' }).text,
    'domain.leave-local': s.domainLeaveLocal('WORKGROUP').text,
    'restart': s.restart('machineadm: the Containers feature needs a restart').text,
    'domain.join': s.domainJoin({ domain: 'corp.example', user: 'CORP\\k8s-joiner', ouPath: 'OU=Nodes,DC=corp,DC=example', newName: '', server: '' }).text,
    'domain.join-offline': s.domainJoinOffline('C:\\ProgramData\\machineadm\\run\\domain-join.odj').text,
  };
}

interface PesterTest {
  name: string;
  result: string;
  error: string;
}

// Invoke-Pester in one process; every test's path, result and error come back as JSON.
const RUN = String.raw`
param([string]$Pester, [string]$TestFile, [string]$ScriptsPath, [string]$StubsPath, [string]$NativeRecord, [string]$Out)
$ErrorActionPreference = 'Stop'
Import-Module -Name $Pester
$container = New-PesterContainer -Path $TestFile -Data @{ ScriptsPath = $ScriptsPath; StubsPath = $StubsPath; NativeRecord = $NativeRecord }
$config = New-PesterConfiguration
$config.Run.Container = $container
$config.Run.PassThru = $true
$config.Output.Verbosity = 'None'
$result = Invoke-Pester -Configuration $config
$tests = @($result.Tests | ForEach-Object { [pscustomobject]@{ name = $_.ExpandedName; result = [string]$_.Result; error = (@($_.ErrorRecord | ForEach-Object { [string]$_ }) -join "` + '`n' + String.raw`") } })
[pscustomobject]@{ result = [string]$result.Result; containers = @($result.Containers | ForEach-Object { [string]$_.Result + (@($_.ErrorRecord | ForEach-Object { ': ' + [string]$_ }) -join '') }); tests = $tests } | ConvertTo-Json -Depth 5 | Set-Content -LiteralPath $Out -Encoding utf8
`;

describe.skipIf(skip)('every Windows action runs in pwsh under Pester against the cmdlets\' declared parameters', () => {
  let tests: PesterTest[] = [];
  let run: { result: string; containers: string[] };

  beforeAll(async () => {
    const { pwsh, pester } = tools as { pwsh: string; pester: string };
    writeFileSync(join(dir, 'scripts.json'), JSON.stringify(scripts()));
    writeFileSync(join(dir, 'run.ps1'), RUN);
    const out = join(dir, 'result.json');
    await promisify(execFile)(pwsh, ['-NoLogo', '-NoProfile', '-NonInteractive', '-File', join(dir, 'run.ps1'),
      '-Pester', pester, '-TestFile', join(HERE, 'windows-actions.Tests.ps1'), '-ScriptsPath', join(dir, 'scripts.json'),
      '-StubsPath', join(HERE, 'windows-cmdlets.ps1'), '-NativeRecord', join(dir, 'native.jsonl'), '-Out', out], {
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, NATIVE_RECORD: join(dir, 'native.jsonl'), SystemRoot: 'C:\\Windows' },
      timeout: 400_000,
    });
    ({ tests, ...run } = JSON.parse(readFileSync(out, 'utf8').replace(/^\uFEFF/, '')) as { result: string; containers: string[]; tests: PesterTest[] });
  }, 450_000);

  it('Pester ran the file and every test passed', () => {
    expect(tests.filter((t) => t.result !== 'Passed')).toEqual([]);
    expect(run.containers).toEqual(['Passed']);
    expect(tests.length).toBeGreaterThanOrEqual(35);
    expect(run.result).toBe('Passed');
  });

  it('every action scripts.ts generates has a Pester test of its own', () => {
    // Each maker called with a value of any shape: a string, or an object whose every field is one.
    const anything = new Proxy({}, { get: (_, key) => (key === 'dependsOn' ? [] : key === 'localPort' ? 1 : 'x') });
    const actions = Object.values(windowsScripts).map((make) => {
      const call = make as (value: unknown) => { action: string };
      try {
        return call('x').action;
      } catch {
        return call(anything).action;
      }
    });
    const covered = (action: string) => tests.some((t) => t.name.startsWith(`${action} `));
    expect(actions.filter((a) => !covered(a))).toEqual([]);
    expect(actions.length).toBe(Object.keys(windowsScripts).length);
  });

  it('the declarations catch a misspelled parameter, a value outside an enum and calls Windows PowerShell 5.1 refuses (the negative controls ran)', () => {
    expect(tests.filter((t) => /^(a misspelled parameter|a value outside an enum|a call Windows PowerShell 5\.1 refuses)/.test(t.name)).map((t) => t.result)).toEqual(Array(14).fill('Passed'));
  });
});
