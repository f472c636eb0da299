// The PowerShell side of the Windows seam that runs here: the command line powershell.exe gets,
// CLIXML errors turned into text, Windows command-line quoting, and what each seam call sends.
import { describe, expect, it } from 'vitest';
import { bootIdOf, createWindowsHost, decodeClixml, powershellArgv, windowsCommandLine, windowsScripts, type WindowsScript } from '../../src/host/windows/index.ts';
import { powershellRunner } from '../../src/host/windows/powershell.ts';
import type { ProcessRunner } from '../../src/host/index.ts';

const CLIXML = `#< CLIXML\r\n<Objs Version="1.1.0.1" xmlns="http://schemas.microsoft.com/powershell/2004/04"><Obj S="progress" RefId="0"><TN RefId="0"><T>System.Management.Automation.PSCustomObject</T></TN><MS><I64 N="SourceId">1</I64><PR N="Record"><AV>Preparing modules for first use.</AV></PR></MS></Obj><S S="Error">Install-WindowsFeature : The request to add or remove features failed._x000D__x000A_</S><S S="Error">At line:4 char:13 &amp; more &lt;here&gt;_x000D__x000A_</S></Objs>`;

describe('the PowerShell runner', () => {
  it('runs powershell.exe with the script as UTF-16LE base64 after -EncodedCommand', () => {
    const script = windowsScripts.featureQuery('Containers');
    const argv = powershellArgv(script);
    expect(argv.slice(0, 6)).toEqual(['powershell.exe', '-NoProfile', '-NonInteractive', '-ExecutionPolicy', 'Bypass', '-EncodedCommand']);
    expect(Buffer.from(argv[6]!, 'base64').toString('utf16le')).toBe(script.text);
  });

  it('decodes CLIXML on stderr into the error lines, without progress records', () => {
    expect(decodeClixml(CLIXML)).toBe('Install-WindowsFeature : The request to add or remove features failed.\nAt line:4 char:13 & more <here>');
    expect(decodeClixml('plain error\n')).toBe('plain error');
  });

  it('reports a failed script with the decoded message and reads the JSON line of a good one', async () => {
    const calls: string[][] = [];
    const fake = (exitCode: number, stdout: string, stderr: string) =>
      ({ run: async (argv: string[]) => (calls.push(argv), { argv, exitCode, stdout, stderr, durationMs: 1 }) }) as unknown as ProcessRunner;
    await expect(powershellRunner(fake(1, '', CLIXML))(windowsScripts.featureInstall('Containers'))).rejects.toThrow(
      /Windows action feature.install failed: Install-WindowsFeature : The request to add or remove features failed\./,
    );
    await expect(powershellRunner(fake(0, 'noise\r\n{"state":"installed"}\r\n', ''))(windowsScripts.featureQuery('Containers'))).resolves.toEqual({ state: 'installed' });
  });
});

describe('Windows command lines', () => {
  it.each([
    [['C:\\k\\kubelet.exe', '--windows-service'], 'C:\\k\\kubelet.exe --windows-service'],
    [['C:\\Program Files\\x.exe', 'a b'], '"C:\\Program Files\\x.exe" "a b"'],
    [['x', ''], 'x ""'],
    [['x', 'say "hi"'], 'x "say \\"hi\\""'],
    [['x', 'C:\\dir with space\\'], 'x "C:\\dir with space\\\\"'],
    [['x', 'a\\\\"b'], 'x "a\\\\\\\\\\"b"'],
  ])('quotes %j as %s', (argv, line) => {
    expect(windowsCommandLine(argv)).toBe(line);
  });
});

describe('the seam', () => {
  function recording(answers: Record<string, unknown> = {}) {
    const sent: WindowsScript[] = [];
    const host = createWindowsHost(async (script) => (sent.push(script), answers[script.action] ?? {}));
    return { host, sent };
  }

  it('keeps the resume command in the task description and reads the same argument vector back', async () => {
    const argv = ['C:\\Program Files\\machineadm\\machineadm.exe', 'init', '-c', 'C:\\cfg\\node 1.yaml', '--resume'];
    const { host, sent } = recording();
    await host.registerResume(argv);
    expect(sent[0]!.values).toMatchObject({ TaskName: 'resume', TaskPath: '\\machineadm\\', Execute: argv[0], Argument: 'init -c "C:\\cfg\\node 1.yaml" --resume', Description: JSON.stringify(argv) });
    const back = createWindowsHost(async () => ({ description: sent[0]!.values.Description }));
    expect(await back.resumeRegistered()).toEqual(argv);
    expect(await createWindowsHost(async () => null).resumeRegistered()).toBeUndefined();
  });

  it.each(['kube*', 'a b', "x'y", '', 'k;l'])('refuses the service name %j before any PowerShell runs', async (name) => {
    const { host, sent } = recording();
    await expect(host.service(name)).rejects.toThrow(/service name/);
    await expect(host.createService({ name: 'ok', displayName: 'ok', argv: ['x'], dependsOn: [name] })).rejects.toThrow(/service name/);
    expect(sent).toEqual([]);
  });

  it('gives a one-element dependency list back as a list', async () => {
    const { host } = recording({ 'service.query': { name: 'kubelet', commandLine: 'x', startMode: 'Auto', state: 'Stopped', dependsOn: 'containerd' } });
    expect((await host.service('kubelet'))?.dependsOn).toEqual(['containerd']);
  });

  it('restarts with a comment that carries no double quote or line break', async () => {
    const { host, sent } = recording();
    await host.restart('step "prepare/windows/feature"\nneeds it');
    expect(sent[0]!.values.Comment).toBe('machineadm: step  prepare/windows/feature needs it');
  });
});

describe('the domain join through the seam', () => {
  // Quote characters, a dollar, a backtick, non-ASCII: all of it must reach Add-Computer unchanged.
  const PASSWORD = 'p4ss’word $(x) `n ü';

  function powershell(stdout: string) {
    const calls: { argv: string[]; input?: string | Uint8Array }[] = [];
    const proc = { run: async (argv: string[], options: { input?: string | Uint8Array }) => (calls.push({ argv, ...(options.input !== undefined ? { input: options.input } : {}) }), { argv, exitCode: 0, stdout, stderr: '', durationMs: 1 }) } as unknown as ProcessRunner;
    return { host: createWindowsHost(powershellRunner(proc)), calls };
  }

  it('sends the password on standard input only (hex of its UTF-8 bytes): never in the script text or the command line', async () => {
    const { host, calls } = powershell('{"joined":true}\r\n');
    const outcome = await host.joinDomain({ domain: 'corp.example', user: 'CORP\\joiner', organizationalUnit: 'OU=Nodes,DC=corp,DC=example', newName: 'NODE-01', server: 'dc1.corp.example' }, PASSWORD);
    expect(outcome).toEqual({ joined: true });
    const [call] = calls;
    const script = Buffer.from(call!.argv.at(-1)!, 'base64').toString('utf16le');
    expect(script).toContain('Add-Computer @join');
    const hex = Buffer.from(PASSWORD, 'utf8').toString('hex');
    for (const form of [PASSWORD, hex, Buffer.from(PASSWORD, 'utf16le').toString('base64'), Buffer.from(PASSWORD).toString('base64')]) {
      expect(script).not.toContain(form);
      expect(call!.argv.join(' ')).not.toContain(form);
    }
    expect(call!.input).toBe(`${hex}\n`);
    // What the script does with it: hex to UTF-8 bytes to characters.
    expect(Buffer.from(String(call!.input).trim(), 'hex').toString('utf8')).toBe(PASSWORD);
  });

  it('runs djoin with the blob path as a literal and gives back its code and output', async () => {
    const { host, calls } = powershell('{"joined":false,"code":2,"message":"The system cannot find the file specified.\\r\\n"}');
    expect(await host.joinDomainOffline('C:\\machineadm\\odj.txt')).toEqual({ joined: false, code: 2, message: 'The system cannot find the file specified.\r\n' });
    expect(calls[0]!.input).toBeUndefined();
    expect(Buffer.from(calls[0]!.argv.at(-1)!, 'base64').toString('utf16le')).toContain("$BlobPath = 'C:\\machineadm\\odj.txt'");
  });

  it('refuses a password with a NUL character before any PowerShell runs', async () => {
    const { host, calls } = powershell('{}');
    await expect(host.joinDomain({ domain: 'corp.example', user: 'u' }, 'a\0b')).rejects.toThrow(/NUL/);
    expect(calls).toEqual([]);
  });
});

describe('the boot identity', () => {
  it.each([
    [{ bootId: '7', lastBootUpTime: '2026-11-30T00:00:00.000Z', build: '20348' }, { bootId: '8', lastBootUpTime: '2026-11-30T00:00:00.000Z', build: '20348' }],
    [{ bootId: '7', lastBootUpTime: '2026-11-30T00:00:00.000Z', build: '20348' }, { bootId: '7', lastBootUpTime: '2026-11-30T00:05:00.000Z', build: '20348' }],
    [{ lastBootUpTime: '2026-11-30T00:00:00.000Z', build: '20348' }, { lastBootUpTime: '2026-11-30T00:05:00.000Z', build: '20348' }],
  ])('changes when either BootId or LastBootUpTime changes (%j -> %j)', (before, after) => {
    expect(bootIdOf(before)).not.toBe(bootIdOf(after));
    expect(bootIdOf(before)).toBe(bootIdOf({ ...before }));
  });
});
