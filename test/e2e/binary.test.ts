// The packaged executable, as an operator runs it: no Node installed, an empty environment, any
// working directory.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { builtBinary } from '../support/binary.ts';
import { scratchDir } from '../support/tmp.ts';
import { missingRequirement } from '../support/environment.ts';
// @ts-expect-error the build script is plain JavaScript (it runs before anything is installed)
import { SEA_EXEC_ARGV } from '../../scripts/build.mjs';

const QUICKSTART = fileURLToPath(new URL('../../examples/quickstart.yaml', import.meta.url));

const COMMANDS = ['init', 'prepare', 'provision', 'report', 'plan', 'config', 'verify', 'keygen', 'sign', 'fetch', 'bundle', 'status', 'version'];

describe('the packaged linux-x64 binary', () => {
  let binary: string;
  const elsewhere = scratchDir();
  beforeAll(async () => {
    binary = await builtBinary();
  });

  it('prints valid version JSON with an empty environment from another directory, without warnings', () => {
    const result = spawnSync('env', ['-i', binary, 'version', '-o', 'json'], { cwd: elsewhere, encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const info = JSON.parse(result.stdout) as Record<string, string>;
    expect(info).toMatchObject({ version: expect.stringMatching(/^\d+\.\d+\.\d+/), node: 'v24.21.0', platform: 'linux-x64' });
    expect(info.commit).toMatch(/^([0-9a-f]{40}(-dirty)?|unknown)$/);
  });

  it('lists every command in --help', () => {
    const result = spawnSync(binary, ['--help'], { cwd: elsewhere, encoding: 'utf8', env: {} });
    expect(result.status).toBe(0);
    const listed = [...result.stdout.matchAll(/^ {2}(\S+)/gm)].map((m) => m[1]);
    for (const command of COMMANDS) expect(listed).toContain(command);
  });

  it('runs init on the quickstart example from a scratch root, twice, converging', () => {
    const root = scratchDir('machineadm-binary-root-');
    const run = () => spawnSync(binary, ['init', '-c', QUICKSTART, '--root', root, '-o', 'json'], { cwd: elsewhere, encoding: 'utf8', env: {} });
    const first = run();
    expect(first.stderr).toBe('');
    expect(first.status).toBe(0);
    const results = (stdout: string) =>
      stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { type: string; step?: string; result?: string })
        .filter((e) => e.type === 'step.finished');
    expect(results(first.stdout).length).toBeGreaterThan(0);
    expect(results(first.stdout).filter((e) => e.result === 'failure')).toEqual([]);
    const second = run();
    expect(second.status).toBe(0);
    expect(results(second.stdout).filter((e) => e.result !== 'skipped').map((e) => `${e.step}=${e.result}`)).toEqual([]);
  });

  it('shows spinners on a terminal (ora, loaded lazily inside the bundle) and finishes', (context) => {
    const missing = missingRequirement({ commands: ['script', 'stty'] });
    if (missing) return context.skip(missing);
    const root = scratchDir('machineadm-binary-tty-');
    // script(1) gives the binary a terminal; stty gives it a width, without which no spinner is shown.
    const command = `stty cols 100 rows 30; "$0" init -c "$1" --root "$2"; echo "exit=$?"`;
    const result = spawnSync('script', ['-qec', `sh -c '${command}' '${binary}' '${QUICKSTART}' '${root}'`, '/dev/null'], { cwd: elsewhere, encoding: 'utf8', env: { TERM: 'xterm' }, timeout: 30_000 });
    expect(result.stdout).toMatch(/exit=0/);
    expect(result.stdout).toMatch(/machineadm init: \w+ in/);
    // ora hides the cursor while it spins and shows it again at the end.
    expect(result.stdout).toContain('\u001b[?25l');
  });

  it('ignores NODE_OPTIONS, so the environment cannot inject code into it', () => {
    const result = spawnSync(binary, ['version'], { cwd: elsewhere, encoding: 'utf8', env: { NODE_OPTIONS: '--require /nonexistent/inject.js' } });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('carries its one Node option in its blob (a 2 MiB young generation) and starts with it', () => {
    // The embedded Node alone holds no such text: only the blob's options can put it there.
    const pinned = fileURLToPath(new URL('../../node_modules/node/bin/node', import.meta.url));
    const count = (file: string) => readFileSync(file).toString('latin1').split(SEA_EXEC_ARGV.join(' ')).length - 1;
    expect(SEA_EXEC_ARGV).toEqual(['--min-semi-space-size=2']);
    expect(count(pinned)).toBe(0);
    expect(count(binary)).toBe(1);
    // V8 refuses an option it does not know at start; a start that works took it.
    expect(spawnSync(binary, ['version'], { cwd: elsewhere, encoding: 'utf8' }).status).toBe(0);
  });

  it('runs no Node script given as an argument', () => {
    const result = spawnSync(binary, ['-e', 'console.log("injected")'], { cwd: elsewhere, encoding: 'utf8', env: {} });
    expect(result.stdout).not.toContain('injected');
    expect(result.status).toBe(2);
  });
});

describe('the packaged linux-arm64 binary', () => {
  // The same blob in the arm64 Node; qemu-user runs it with Debian's arm64 cross libraries.
  const SYSROOT = '/usr/aarch64-linux-gnu';
  it('prints valid version JSON under qemu-user with an empty environment', async (context) => {
    // The cross libraries are no command: their package name stands in for one, for the same skip/CI rule.
    const missing = missingRequirement({ commands: ['qemu-aarch64'] }) ?? (existsSync(`${SYSROOT}/lib/ld-linux-aarch64.so.1`) ? undefined : missingRequirement({ commands: ['libc6-arm64-cross'] }));
    if (missing) return context.skip(missing);
    const binary = await builtBinary({ target: 'linux-arm64' });
    const result = spawnSync('qemu-aarch64', ['-L', SYSROOT, binary, 'version', '-o', 'json'], { cwd: scratchDir(), encoding: 'utf8', env: {}, timeout: 60_000 });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ node: 'v24.21.0', platform: 'linux-arm64' });
  }, 180_000);
});


// No Windows here: the exe is checked for what makes Node start it as machineadm (the fuse, the
// NODE_SEA_BLOB resource holding machineadm's code) and for the state of its signature.
interface PeInfo {
  certificateTable: [number, number];
  checksum: number;
  computedChecksum: number;
  resources: { type: number | string; name: number | string; data: Buffer }[];
}

function readPe(exe: Buffer): PeInfo {
  const pe = exe.readUInt32LE(0x3c);
  expect(exe.toString('latin1', pe, pe + 4)).toBe('PE\0\0');
  const sections = exe.readUInt16LE(pe + 6);
  const optional = pe + 24;
  const optionalSize = exe.readUInt16LE(pe + 20);
  expect(exe.readUInt16LE(optional)).toBe(0x20b);
  const dir = (i: number): [number, number] => [exe.readUInt32LE(optional + 112 + 8 * i), exe.readUInt32LE(optional + 112 + 8 * i + 4)];
  const table = optional + optionalSize;
  const toOffset = (rva: number): number => {
    for (let i = 0; i < sections; i++) {
      const s = table + 40 * i;
      const va = exe.readUInt32LE(s + 12);
      const size = Math.max(exe.readUInt32LE(s + 8), exe.readUInt32LE(s + 16));
      if (rva >= va && rva < va + size) return rva - va + exe.readUInt32LE(s + 20);
    }
    throw new Error(`RVA ${rva} is in no section`);
  };
  const [resourceRva] = dir(2);
  const base = toOffset(resourceRva);
  const nameOf = (entry: number): number | string => {
    const id = exe.readUInt32LE(entry);
    if (!(id & 0x80000000)) return id;
    const at = base + (id & 0x7fffffff);
    return exe.toString('utf16le', at + 2, at + 2 + 2 * exe.readUInt16LE(at));
  };
  const entries = (offset: number) => {
    const count = exe.readUInt16LE(offset + 12) + exe.readUInt16LE(offset + 14);
    return Array.from({ length: count }, (_, i) => offset + 16 + 8 * i);
  };
  const child = (entry: number) => base + (exe.readUInt32LE(entry + 4) & 0x7fffffff);
  const resources: PeInfo['resources'] = [];
  for (const typeEntry of entries(base)) {
    for (const nameEntry of entries(child(typeEntry))) {
      for (const langEntry of entries(child(nameEntry))) {
        const leaf = base + exe.readUInt32LE(langEntry + 4);
        const data = toOffset(exe.readUInt32LE(leaf));
        resources.push({ type: nameOf(typeEntry), name: nameOf(nameEntry), data: exe.subarray(data, data + exe.readUInt32LE(leaf + 4)) });
      }
    }
  }
  // imagehlp's CheckSumMappedFile: 16-bit one's-complement sum without the checksum field, plus the length.
  const checksumAt = optional + 64;
  let sum = 0;
  for (let i = 0; i + 1 < exe.length; i += 2) {
    if (i === checksumAt || i === checksumAt + 2) continue;
    sum += exe.readUInt16LE(i);
    sum = (sum & 0xffff) + (sum >>> 16);
  }
  if (exe.length % 2) sum = ((sum + exe[exe.length - 1]!) & 0xffff) + ((sum + exe[exe.length - 1]!) >>> 16);
  return { certificateTable: dir(4), checksum: exe.readUInt32LE(checksumAt), computedChecksum: ((sum & 0xffff) + (sum >>> 16) + exe.length) >>> 0, resources };
}

describe('the packaged windows-x64 binary', () => {
  it('carries machineadm as the NODE_SEA_BLOB resource, the fuse set, no stale signature, a valid checksum', async () => {
    const exe = readFileSync(await builtBinary({ target: 'windows-x64' }));
    const fuse = Buffer.from('NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2:');
    const at = exe.indexOf(fuse);
    expect(at).toBeGreaterThan(0);
    expect(exe.indexOf(fuse, at + 1)).toBe(-1);
    expect(String.fromCharCode(exe[at + fuse.length]!)).toBe('1');
    const pe = readPe(exe);
    const RT_RCDATA = 10;
    const blob = pe.resources.filter((r) => r.type === RT_RCDATA && r.name === 'NODE_SEA_BLOB');
    expect(blob).toHaveLength(1);
    expect(blob[0]!.data.includes('Turns a freshly booted Linux or Windows machine into a Kubernetes node.')).toBe(true);
    expect(pe.certificateTable).toEqual([0, 0]);
    expect(pe.checksum).toBe(pe.computedChecksum);
    // Building it takes ~20 s alone and several times that beside the rest of the suite.
  }, 180_000);
});
