// RootedFileSystem: paths stay under the root, and writes are atomic also when the process is
// killed in the middle of one (a real SIGKILL of a real writer, many times).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { RootedFileSystem, TEMP_MARK, temporaryName } from '../../src/host/fs.ts';
import { UsageError } from '../../src/errors.ts';
import { scratchDir } from '../support/tmp.ts';

const FS_MODULE = pathToFileURL(fileURLToPath(new URL('../../src/host/fs.ts', import.meta.url))).href;

const temporaries = (dir: string) => readdirSync(dir).filter((n) => n.includes(TEMP_MARK));

describe('RootedFileSystem paths', () => {
  it.each([
    ['/etc/x.conf', 'etc/x.conf'],
    ['/', ''],
    ['//etc//x', 'etc/x'],
  ])('maps %s under the root', (machinePath, under) => {
    const root = scratchDir();
    expect(new RootedFileSystem(root).mapPath(machinePath)).toBe(join(root, under));
  });

  it.each([
    ['a relative path', 'etc/x.conf', /not absolute/],
    ['a ".." segment', '/etc/../../x', /contains "\.\."/],
    ['a ".." at the end', '/etc/..', /contains "\.\."/],
  ])('refuses %s', async (_name, machinePath, message) => {
    const fs = new RootedFileSystem(scratchDir());
    await expect(fs.writeFile(machinePath, 'x')).rejects.toThrow(message);
    await expect(fs.writeFile(machinePath, 'x')).rejects.toBeInstanceOf(UsageError);
  });

  it('refuses to write through a directory link that leaves the root, and writes nothing outside', async () => {
    const root = scratchDir();
    const outside = scratchDir('machineadm-outside-');
    symlinkSync(outside, join(root, 'etc'));
    const fs = new RootedFileSystem(root);
    await expect(fs.writeFile('/etc/passwd', 'owned')).rejects.toThrow(/symbolic link .* outside the root/);
    await expect(fs.readFile('/etc/passwd')).rejects.toThrow(/outside the root/);
    expect(readdirSync(outside)).toEqual([]);
  });

  it('refuses a file link that points outside the root, leaving its target untouched', async () => {
    const root = scratchDir();
    const outside = scratchDir('machineadm-outside-');
    writeFileSync(join(outside, 'shadow'), 'original');
    mkdirSync(join(root, 'etc'));
    symlinkSync(join(outside, 'shadow'), join(root, 'etc', 'shadow'));
    await expect(new RootedFileSystem(root).writeFile('/etc/shadow', 'owned')).rejects.toThrow(/outside the root/);
    expect(readFileSync(join(outside, 'shadow'), 'utf8')).toBe('original');
  });

  it('refuses to write through a planted link even when it stays inside the root', async () => {
    const root = scratchDir();
    mkdirSync(join(root, 'etc'));
    writeFileSync(join(root, 'etc', 'real'), 'original');
    symlinkSync(join(root, 'etc', 'real'), join(root, 'etc', 'planted'));
    await expect(new RootedFileSystem(root).writeFile('/etc/planted', 'new')).rejects.toThrow(/is a symbolic link/);
    expect(readFileSync(join(root, 'etc', 'real'), 'utf8')).toBe('original');
  });

  it('makes no folder outside the root when a durable record is written through a link that leaves it', () => {
    const root = scratchDir();
    const outside = scratchDir('machineadm-outside-');
    symlinkSync(outside, join(root, 'var'));
    const fs = new RootedFileSystem(root);
    expect(() => fs.writeFileDurableSync('/var/lib/machineadm/spool/event.json', '{}')).toThrow(/outside the root/);
    expect(readdirSync(outside)).toEqual([]);
  });

  it('follows links that stay inside the root for directories', async () => {
    const root = scratchDir();
    mkdirSync(join(root, 'data'));
    symlinkSync(join(root, 'data'), join(root, 'srv'));
    await new RootedFileSystem(root).writeFile('/srv/x', 'inside');
    expect(readFileSync(join(root, 'data', 'x'), 'utf8')).toBe('inside');
  });
});

describe('RootedFileSystem writes', () => {
  it('creates a secret with mode 0600 from the first byte, not only after the rename', async () => {
    const root = scratchDir();
    const fs = new RootedFileSystem(root);
    const pending = await fs.openWrite('/etc/secret.key', { mode: 0o600 });
    pending.stream.write('top secret');
    const [temp] = temporaries(join(root, 'etc'));
    expect(temp).toBeDefined();
    expect(statSync(join(root, 'etc', temp!)).mode & 0o777).toBe(0o600);
    expect(existsSync(join(root, 'etc', 'secret.key'))).toBe(false);
    await pending.commit();
    expect(statSync(join(root, 'etc', 'secret.key')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(root, 'etc', 'secret.key'), 'utf8')).toBe('top secret');
    expect(temporaries(join(root, 'etc'))).toEqual([]);
  });

  it('leaves the path untouched when a pending write is aborted', async () => {
    const root = scratchDir();
    const fs = new RootedFileSystem(root);
    await fs.writeFile('/f', 'old');
    const pending = await fs.openWrite('/f');
    pending.stream.write('half of the new');
    await pending.abort();
    expect(readFileSync(join(root, 'f'), 'utf8')).toBe('old');
    expect(temporaries(root)).toEqual([]);
  });

  // The kubelet loads every file in its manifests folder that is not hidden, and systemd, sysctl.d
  // and modules-load.d read whole folders too: a backup beside the file would be one more live file.
  it.each([
    ['/etc/kubernetes/manifests/extra.yaml'],
    ['/etc/sysctl.d/90-machineadm.conf'],
    ['/etc/modules-load.d/machineadm.conf'],
    ['/etc/containerd/certs.d/docker.io/hosts.toml'],
  ])('keeps the first content of %s under the backup folder, once, and nothing beside it', async (machinePath) => {
    const root = scratchDir();
    const backups = join(scratchDir('machineadm-state-'), 'backup');
    const fs = new RootedFileSystem(root, { backupDir: backups });
    await fs.writeFile(machinePath, 'v1', { mode: 0o640 });
    const kept = join(backups, machinePath);
    expect(existsSync(kept)).toBe(false);
    await fs.writeFile(machinePath, 'v2');
    await fs.writeFile(machinePath, 'v3');
    expect(readFileSync(join(root, machinePath), 'utf8')).toBe('v3');
    expect(readFileSync(kept, 'utf8')).toBe('v1');
    // The file keeps its mode when none is given; the backup has the original's.
    expect(statSync(join(root, machinePath)).mode & 0o777).toBe(0o640);
    expect(statSync(kept).mode & 0o777).toBe(0o640);
    expect(readdirSync(join(root, machinePath, '..'))).toEqual([machinePath.split('/').pop()]);
    expect(readdirSync(join(kept, '..'))).toEqual([machinePath.split('/').pop()]);
    // A backup of a secret is as private as the secret, folders included.
    expect(statSync(join(kept, '..')).mode & 0o777).toBe(0o700);
  });

  it.each([
    ['without a backup folder (the operator\'s own files)', undefined, {}],
    ['when told not to', 'backup', { backup: false }],
  ])('makes no backup %s', async (_case, backupName, options) => {
    const root = scratchDir();
    const state = scratchDir('machineadm-state-');
    const fs = new RootedFileSystem(root, backupName ? { backupDir: join(state, backupName) } : {});
    await fs.writeFile('/state.json', '1', options);
    await fs.writeFile('/state.json', '2', options);
    expect(readdirSync(root)).toEqual(['state.json']);
    expect(readdirSync(state)).toEqual([]);
  });

  it('removes a backup copy that an earlier crash left half written, and keeps the whole original', async () => {
    const root = scratchDir();
    const backups = scratchDir('machineadm-state-');
    mkdirSync(join(backups, 'etc'));
    const stale = `.app.conf${TEMP_MARK}0123456789ab`;
    writeFileSync(join(backups, 'etc', stale), 'parti');
    const fs = new RootedFileSystem(root, { backupDir: backups });
    mkdirSync(join(root, 'etc'));
    writeFileSync(join(root, 'etc', 'app.conf'), 'original');
    await fs.writeFile('/etc/app.conf', 'new');
    expect(readdirSync(join(backups, 'etc'))).toEqual(['app.conf']);
    expect(readFileSync(join(backups, 'etc', 'app.conf'), 'utf8')).toBe('original');
  });

  it('removes temporaries that an earlier crash left behind on the next write', async () => {
    const root = scratchDir();
    mkdirSync(join(root, 'etc'));
    const stale = [`.app.conf${TEMP_MARK}0123456789ab`, `.app.conf${TEMP_MARK}fedcba987654`];
    for (const name of stale) writeFileSync(join(root, 'etc', name), 'partial');
    writeFileSync(join(root, 'etc', `.other.conf${TEMP_MARK}0123456789ab`), 'not ours to remove');
    await new RootedFileSystem(root).writeFile('/etc/app.conf', 'whole');
    expect(readdirSync(join(root, 'etc')).sort()).toEqual([`.other.conf${TEMP_MARK}0123456789ab`, 'app.conf']);
  });

  // The temporary file's name adds ~40 bytes to the file's: it must still fit in the 255 a name may have.
  it.each([
    ['letters', 'a'.repeat(245)],
    ['two-byte characters', 'é'.repeat(120) + '.conf'],
  ])('replaces a file whose name of %s is as long as a file system allows, and keeps its backup', async (_case, name) => {
    const root = scratchDir();
    const state = scratchDir('machineadm-state-');
    const fs = new RootedFileSystem(root, { backupDir: join(state, 'backup'), writtenDir: join(state, 'written') });
    mkdirSync(join(root, 'etc'));
    writeFileSync(join(root, 'etc', name), 'original');
    writeFileSync(join(root, 'etc', temporaryName(name)), 'left by a crash');
    await fs.writeFile(`/etc/${name}`, 'first');
    await fs.writeFile(`/etc/${name}`, 'second');
    expect(readFileSync(join(root, 'etc', name), 'utf8')).toBe('second');
    expect(readFileSync(join(state, 'backup', 'etc', name), 'utf8')).toBe('original');
    expect(readdirSync(join(root, 'etc'))).toEqual([name]);
    expect(readdirSync(join(state, 'backup', 'etc'))).toEqual([name]);
  });

  it('refuses to replace a directory', async () => {
    const root = scratchDir();
    mkdirSync(join(root, 'etc'));
    await expect(new RootedFileSystem(root).writeFile('/etc', 'x')).rejects.toThrow(/is a directory/);
  });

  // Up to 1 MiB the bytes are written at once, beyond through a stream: the same file either way.
  it.each([
    ['a configuration file', 100],
    ['1 MiB exactly', 1024 * 1024],
    ['1 MiB and a byte', 1024 * 1024 + 1],
  ])('writes %s whole, with its mode and a backup of the file it replaces', async (_case, size) => {
    const root = scratchDir();
    const backups = scratchDir('machineadm-state-');
    const fs = new RootedFileSystem(root, { backupDir: backups });
    const bytes = Buffer.alloc(size, 'k');
    bytes.write('first');
    await fs.writeFile('/etc/app/secret.key', 'original');
    await fs.writeFile('/etc/app/secret.key', bytes, { mode: 0o600 });
    expect(readFileSync(join(root, 'etc', 'app', 'secret.key')).equals(bytes)).toBe(true);
    expect(statSync(join(root, 'etc', 'app', 'secret.key')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(backups, 'etc', 'app', 'secret.key'), 'utf8')).toBe('original');
    expect(readdirSync(join(root, 'etc', 'app'))).toEqual(['secret.key']);
  });

  // Changing a file's owner clears its set-user-ID and set-group-ID bits (also for root): the mode goes on last.
  it.skipIf(process.getuid?.() !== 0).each([
    ['at once', 100],
    ['through a stream', 1024 * 1024 + 1],
  ])('keeps the set-user-ID and set-group-ID bits of a file written %s with an owner', async (_case, size) => {
    const root = scratchDir();
    const fs = new RootedFileSystem(root);
    await fs.writeFile('/usr/local/bin/tool', Buffer.alloc(size, 't'), { mode: 0o6755, owner: '0:0' });
    expect(statSync(join(root, 'usr', 'local', 'bin', 'tool')).mode & 0o7777).toBe(0o6755);
  });

  it.skipIf(process.getuid?.() !== 0)('keeps the set-user-ID bit when only the mode and owner of a file are set', async () => {
    const root = scratchDir();
    const fs = new RootedFileSystem(root);
    await fs.writeFile('/usr/local/bin/tool', 'tool', { mode: 0o755 });
    await fs.setAttributes('/usr/local/bin/tool', { mode: 0o4755, owner: '0:0' });
    expect(statSync(join(root, 'usr', 'local', 'bin', 'tool')).mode & 0o7777).toBe(0o4755);
  });

  it('refuses an owner that does not exist before it records the path or makes a folder', async () => {
    const root = scratchDir();
    const state = scratchDir('machineadm-state-');
    const fs = new RootedFileSystem(root, { backupDir: join(state, 'backup'), writtenDir: join(state, 'written') });
    await expect(fs.writeFile('/etc/app/app.conf', 'x', { owner: 'no-such-user:no-such-group' })).rejects.toThrow(/user "no-such-user" does not exist/);
    expect(readdirSync(root)).toEqual([]);
    expect(readdirSync(state)).toEqual([]);
  });

  // The backup folder cannot be made (a file is in its way): the write fails before its rename.
  it.each([
    ['at once', 100],
    ['through a stream', 1024 * 1024 + 1],
  ])('leaves the file as it was when a write %s fails before its rename', async (_case, size) => {
    const root = scratchDir();
    const state = scratchDir('machineadm-state-');
    writeFileSync(join(state, 'backup'), 'not a folder');
    const fs = new RootedFileSystem(root, { backupDir: join(state, 'backup') });
    mkdirSync(join(root, 'etc'));
    writeFileSync(join(root, 'etc', 'app.conf'), 'original');
    await expect(fs.writeFile('/etc/app.conf', Buffer.alloc(size, 'n'))).rejects.toThrow(/ENOTDIR|EEXIST/);
    expect(readFileSync(join(root, 'etc', 'app.conf'), 'utf8')).toBe('original');
    expect(readdirSync(join(root, 'etc'))).toEqual(['app.conf']);
  });
});

describe('RootedFileSystem writes killed with SIGKILL', () => {
  const SIZE = 4 * 1024 * 1024;
  const KILLS = 30;
  // The writer replaces the file with A and B in turn, for ever; the test kills it at random times.
  const writer = `
const { RootedFileSystem } = await import(process.argv[2]);
const fs = new RootedFileSystem(process.argv[3], { backupDir: process.argv[5] });
const size = Number(process.argv[4]);
const contents = [Buffer.alloc(size, 'A'), Buffer.alloc(size, 'B')];
process.stdout.write('ready\\n');
for (let i = 0; ; i++) await fs.writeFile('/var/lib/data.bin', contents[i % 2], { mode: 0o600 });
`;

  function runAndKill(script: string, root: string, backups: string, delayMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [script, FS_MODULE, root, String(SIZE), backups], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.stdout.once('data', () => setTimeout(() => child.kill('SIGKILL'), delayMs));
      child.on('error', reject);
      child.on('exit', (code, signal) => (signal === 'SIGKILL' ? resolve() : reject(new Error(`writer exited on its own (${code}): ${stderr}`))));
    });
  }

  it(`leaves the old or the new file, never a mix, across ${KILLS} kills`, async () => {
    const root = scratchDir();
    const backups = scratchDir('machineadm-state-');
    const script = join(scratchDir('machineadm-writer-'), 'writer.mjs');
    writeFileSync(script, writer);
    const dir = join(root, 'var', 'lib');
    mkdirSync(dir, { recursive: true });
    const old = Buffer.alloc(SIZE, 'O');
    writeFileSync(join(dir, 'data.bin'), old, { mode: 0o600 });
    const valid = new Map([
      ['old', old],
      ['A', Buffer.alloc(SIZE, 'A')],
      ['B', Buffer.alloc(SIZE, 'B')],
    ]);
    const seen: Record<string, number> = {};
    let killedWithTemporary = 0;
    const backup = join(backups, 'var/lib/data.bin');
    for (let i = 0; i < KILLS; i++) {
      // The first third starts from the original each time and kills early, inside the first
      // write and its backup copy; the rest kill anywhere in a stream of replacements.
      const early = i < KILLS / 3;
      if (early) {
        writeFileSync(join(dir, 'data.bin'), old, { mode: 0o600 });
        rmSync(backup, { force: true });
      }
      await runAndKill(script, root, backups, Math.floor(Math.random() * (early ? 20 : 250)));
      const now = readFileSync(join(dir, 'data.bin'));
      const match = [...valid.entries()].find(([, content]) => content.equals(now))?.[0];
      expect(match, `after kill ${i + 1} the file has ${now.length} bytes starting ${now.subarray(0, 8).toString()} that match no complete version`).toBeDefined();
      seen[match!] = (seen[match!] ?? 0) + 1;
      expect(statSync(join(dir, 'data.bin')).mode & 0o777).toBe(0o600);
      if (temporaries(dir).length > 0) killedWithTemporary++;
      // The backup is the replaced original, complete, or not there yet; never partial.
      if (existsSync(backup)) expect(readFileSync(backup).equals(old), `after kill ${i + 1} the backup is not the original`).toBe(true);
    }
    // The kills landed in the middle of writes (temporaries left behind) and after complete ones.
    expect(killedWithTemporary).toBeGreaterThan(0);
    expect((seen.A ?? 0) + (seen.B ?? 0)).toBeGreaterThan(0);
    // The next write cleans up whatever the kills left behind.
    await new RootedFileSystem(root, { backupDir: backups }).writeFile('/var/lib/data.bin', 'final');
    expect(temporaries(dir)).toEqual([]);
    expect(readdirSync(dir)).toEqual(['data.bin']);
    expect(readdirSync(join(backups, 'var/lib'))).toEqual(['data.bin']);
    expect(readFileSync(backup).equals(old)).toBe(true);
  });
});
