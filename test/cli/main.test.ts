// The command-line surface: the architecture's commands, help with examples, usage errors as one
// error line and one hint line with exit 2, and errors mapped to the documented exit codes.
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram, main, reportError } from '../../src/cli/main.ts';
import type { Io } from '../../src/cli/io.ts';
import {
  CommandError,
  ConfigError,
  NotAvailableError,
  RebootRequiredError,
  StepError,
  UsageError,
  VerificationError,
} from '../../src/errors.ts';

const ARCHITECTURE_COMMANDS = ['init', 'prepare', 'provision', 'report', 'plan', 'config', 'verify', 'keygen', 'sign', 'fetch', 'status', 'version'];

function fakeIo(env: NodeJS.ProcessEnv = {}): Io & { out: string; err: string } {
  const io = {
    out: '',
    err: '',
    stdout: (text: string) => void (io.out += text),
    stderr: (text: string) => void (io.err += text),
    readStdin: async () => Buffer.alloc(0),
    env,
    cwd: '/',
    interactive: false,
  };
  return io;
}

async function run(args: string[], env: NodeJS.ProcessEnv = {}) {
  const io = fakeIo(env);
  const code = await main(args, io);
  return { code, stdout: io.out, stderr: io.err };
}

/** Every command path in the program: ["init"], ["config"], ["config", "validate"], ... */
function commandPaths(command: Command, prefix: string[] = []): string[][] {
  return command.commands.flatMap((c) => [[...prefix, c.name()], ...commandPaths(c, [...prefix, c.name()])]);
}
const allPaths = commandPaths(buildProgram(fakeIo(), () => undefined));

describe('a run of one command builds only that command', () => {
  const everyCommand = buildProgram(fakeIo(), () => undefined).commands.map((c) => c.name());

  // completion describes every command, so it builds them all (below).
  it.each(everyCommand.filter((name) => name !== 'completion'))('"%s" alone: its tree, without the others', (name) => {
    const program = buildProgram(fakeIo(), () => undefined, name);
    const names = program.commands.map((c) => c.name());
    expect(names).toContain(name);
    expect(names.length).toBeLessThan(everyCommand.length);
    // Same command, same options and subcommands as in the whole program.
    const full = buildProgram(fakeIo(), () => undefined).commands.find((c) => c.name() === name)!;
    const alone = program.commands.find((c) => c.name() === name)!;
    expect(commandPaths(alone)).toEqual(commandPaths(full));
    expect(alone.options.map((o) => o.flags)).toEqual(full.options.map((o) => o.flags));
  });

  it.each([['help'], ['--help'], ['-V'], ['verfiy'], ['completion'], [undefined]])('%s builds every command (help lists them, a misspelt one gets a suggestion, completion describes them)', (first) => {
    expect(buildProgram(fakeIo(), () => undefined, first).commands.map((c) => c.name())).toEqual(everyCommand);
  });

  it('a misspelt command is still answered with the suggestion', async () => {
    const { code, stderr } = await run(['verfiy']);
    expect(code).toBe(2);
    expect(stderr).toContain('(did you mean verify?)');
  });
});

describe('machineadm --help', () => {
  it('lists every command of the architecture', async () => {
    const { code, stdout } = await run(['--help']);
    expect(code).toBe(0);
    const listed = [...stdout.matchAll(/^ {2}(\S+)/gm)].map((m) => m[1]);
    for (const command of ARCHITECTURE_COMMANDS) expect(listed, `"${command}" in --help`).toContain(command);
  });

  it('lists config validate, view and schema under config', async () => {
    const { stdout } = await run(['config', '--help']);
    for (const sub of ['validate', 'view', 'schema']) expect(stdout).toMatch(new RegExp(`^ {2}${sub}\\b`, 'm'));
  });

  it.each(allPaths.map((p) => [p.join(' '), p]))('"%s --help" shows an example', async (_name, path) => {
    const { code, stdout } = await run([...path, '--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/\nExamples?:\n {2}\$ machineadm /);
  });
});

describe('usage errors', () => {
  it.each([
    ['an unknown flag', ['version', '--bogus'], /^error: unknown option '--bogus'$/, 'machineadm version --help'],
    ['an unknown flag with a near miss', ['plan', '--roo', '/x'], /^error: unknown option '--roo' \(did you mean --root\?\)$/, 'machineadm plan --help'],
    ['an unknown command', ['inti'], /^error: unknown command 'inti' \(did you mean init\?\)$/, 'machineadm --help'],
    ['an unknown flag of a sub-command', ['config', 'view', '--bogus'], /^error: unknown option '--bogus'$/, 'machineadm config view --help'],
    ['a flag without its value', ['init', '--only'], /^error: option '--only <ids>' argument missing$/, 'machineadm init --help'],
    ['a value not among the choices', ['version', '-o', 'xml'], /^error: option '-o, --output <format>' argument 'xml' is invalid/, 'machineadm version --help'],
  ])('%s exits 2 with one error line and one hint line', async (_name, args, error, hint) => {
    const { code, stdout, stderr } = await run(args);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    const lines = stderr.replace(/\n$/, '').split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(error);
    expect(lines[1]).toMatch(/^hint: /);
    expect(lines[1]).toContain(hint);
  });

  it.each([
    ['config without its subcommand', ['config'], 'Usage: machineadm config [options] [command]'],
    ['help for a command that does not exist', ['help', 'bogus'], 'Usage: machineadm [options] [command]'],
  ])('%s prints the help on standard error and exits 2', async (_name, args, usage) => {
    const { code, stdout, stderr } = await run(args);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain(usage);
  });

  it('help for a command prints its help on standard output and exits 0', async () => {
    const { code, stdout, stderr } = await run(['help', 'config']);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toContain('Usage: machineadm config [options] [command]');
  });

  it('rejects an empty --only list', async () => {
    const { code, stderr } = await run(['plan', '--only', ',']);
    expect(code).toBe(2);
    expect(stderr).toMatch(/empty step id list/);
  });
});

describe('machineadm version', () => {
  it('prints version, commit, Node version and platform as JSON', async () => {
    const { code, stdout, stderr } = await run(['version', '-o', 'json']);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    const info = JSON.parse(stdout) as Record<string, unknown>;
    expect(Object.keys(info).sort()).toEqual(['commit', 'node', 'platform', 'version']);
    expect(info.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(info.node).toBe(process.version);
    expect(info.platform).toBe(`${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`);
    expect(typeof info.commit).toBe('string');
  });

  it('prints one line of text by default', async () => {
    const { stdout } = await run(['version']);
    expect(stdout).toMatch(/^machineadm \d+\.\d+\.\d+\S* \(commit \S+, node v\d+\.\d+\.\d+, \S+\)\n$/);
  });

  it('answers --version with the version alone', async () => {
    const { code, stdout } = await run(['--version']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^\d+\.\d+\.\d+\S*\n$/);
  });
});

describe('errors to exit codes', () => {
  it.each<[string, unknown, number, RegExp]>([
    ['a capability not in this build', new NotAvailableError('"machineadm frobnicate" is not available in this build yet', { hint: 'see docs/contract.md' }), 2, /^error: "machineadm frobnicate" is not available in this build yet\nhint: see docs\/contract\.md\n$/],
    ['bad usage', new UsageError('--facts only goes with plan'), 2, /^error: --facts only goes with plan\n$/],
    ['invalid configuration, with every issue', new ConfigError([{ source: 'a.yaml', line: 3, path: 'spec.x', message: 'unknown field' }, { path: 'spec.y', message: 'required' }]), 2, /^error: invalid configuration \(2 problems\):\n {2}a\.yaml:3: spec\.x: unknown field\n {2}spec\.y: required\n$/],
    ['a failed verification', new VerificationError('signature does not match', { hint: 'check the public key' }), 3, /^error: signature does not match\nhint: check the public key\n$/],
    ['a failed step', new StepError('prepare/sysctls', new CommandError('sysctl exited with code 1', { argv: ['sysctl'] })), 1, /^error: step prepare\/sysctls failed: sysctl exited with code 1\n$/],
    ['an unexpected error', new TypeError('x is undefined'), 1, /^error: x is undefined\nhint: this is a bug in machineadm; rerun with MACHINEADM_DEBUG=1/],
  ])('%s exits with its documented code and an error line', (_name, error, code, output) => {
    const io = fakeIo();
    expect(reportError(error, io)).toBe(code);
    expect(io.err).toMatch(output);
    expect(io.out).toBe('');
  });

  it('says a planned reboot as one reboot: line with exit 4, not as an error', () => {
    const io = fakeIo();
    expect(reportError(new RebootRequiredError('prepare/windows/containers', 'the Containers feature was enabled'), io)).toBe(4);
    expect(io.err).toBe('reboot: step prepare/windows/containers requires a reboot: the Containers feature was enabled; machineadm resumes after it\n');
    expect(io.out).toBe('');
  });

  it('shows the stack of an unexpected error with -v as with MACHINEADM_DEBUG', () => {
    const io = fakeIo();
    reportError(new TypeError('boom'), io, { verbose: true });
    expect(io.err).toMatch(/^error: boom\nhint: [^\n]*\nTypeError: boom\n {4}at /);
  });

  it('shows the stack of an unexpected error only with MACHINEADM_DEBUG', () => {
    const quiet = fakeIo();
    reportError(new TypeError('boom'), quiet);
    expect(quiet.err).not.toContain('    at ');
    const debug = fakeIo({ MACHINEADM_DEBUG: '1' });
    reportError(new TypeError('boom'), debug);
    expect(debug.err).toContain('    at ');
  });

  it('turns a NotAvailableError thrown by a command action of the real program into exit 2', async () => {
    // Which commands are still missing changes from build to build, so the probe is a command of its own.
    const program = buildProgram(fakeIo(), () => undefined);
    program.command('probe-not-available').action(() => {
      throw new NotAvailableError('"machineadm probe-not-available" is not available in this build yet', { hint: 'see docs/contract.md' });
    });
    const io = fakeIo();
    const code = await program.parseAsync(['probe-not-available'], { from: 'user' }).then(
      () => 0,
      (error: unknown) => reportError(error, io),
    );
    expect(code).toBe(2);
    expect(io.err).toBe('error: "machineadm probe-not-available" is not available in this build yet\nhint: see docs/contract.md\n');
  });
});
