// The records for reset (src/host/written.ts): side by side in written/, whatever folder each file
// is in; an earlier version's record at the machine path below written/ still read, and replaced
// at the path's next write; temporary records of killed writers cleared.
import { mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RootedFileSystem } from '../../src/host/fs.ts';
import { recordName } from '../../src/host/written.ts';
import { scratchDir } from '../support/tmp.ts';

function machine() {
  const root = scratchDir();
  const state = scratchDir('machineadm-state-');
  const written = join(state, 'written');
  return { root, written, fs: new RootedFileSystem(root, { backupDir: join(state, 'backup'), writtenDir: written }) };
}

describe('the records of written files', () => {
  it('lie side by side in one folder, named after the machine path, whatever folders the files are in', async () => {
    const { fs, written } = machine();
    await fs.writeFile('/etc/sysctl.d/90-machineadm.conf', 'a');
    await fs.writeFile('/etc/containerd/certs.d/docker.io/hosts.toml', 'b');
    await fs.writeFile('/opt/x y/ü.conf', 'c');
    expect(readdirSync(written).sort()).toEqual(['%2Fetc%2Fcontainerd%2Fcerts.d%2Fdocker.io%2Fhosts.toml', '%2Fetc%2Fsysctl.d%2F90-machineadm.conf', '%2Fopt%2Fx%20y%2F%C3%BC.conf']);
    const record = JSON.parse(readFileSync(join(written, '%2Fetc%2Fcontainerd%2Fcerts.d%2Fdocker.io%2Fhosts.toml'), 'utf8'));
    expect(record).toMatchObject({ path: '/etc/containerd/certs.d/docker.io/hosts.toml', before: null, dirs: ['/etc/containerd', '/etc/containerd/certs.d', '/etc/containerd/certs.d/docker.io'] });
    expect(record.written).toHaveLength(1);
    expect((await fs.written!.all()).map((r) => r.path)).toEqual(['/etc/containerd/certs.d/docker.io/hosts.toml', '/etc/sysctl.d/90-machineadm.conf', '/opt/x y/ü.conf']);
  });

  it('name a long path by its digest, within what a file system allows, and keep paths apart', () => {
    const long = `/etc/${'d/'.repeat(150)}f.conf`;
    expect(recordName(long)).toMatch(/^~[0-9a-f]{64}$/);
    expect(recordName(`${long}x`)).not.toBe(recordName(long));
    expect(recordName('/etc/a%2Fb')).not.toBe(recordName('/etc/a/b'));
    expect(recordName('C:\\etc\\x')).toBe('C%3A%5Cetc%5Cx');
  });

  it("of an earlier version, at the file's machine path below written/, are read, and replaced at the next write", async () => {
    const { fs, root, written } = machine();
    mkdirSync(join(root, 'etc/app'), { recursive: true });
    writeFileSync(join(root, 'etc/app/app.conf'), 'original');
    // As an earlier version left it: the file is what was there before, kept in backup/.
    mkdirSync(join(written, 'etc/app'), { recursive: true });
    const earlier = { path: '/etc/app/app.conf', before: { mode: 0o100644 & 0o7777, uid: process.getuid!(), gid: process.getgid!() }, dirs: [], written: [] };
    writeFileSync(join(written, 'etc/app/app.conf'), JSON.stringify(earlier));
    expect(await fs.written!.read('/etc/app/app.conf')).toEqual(earlier);
    expect(await fs.written!.all()).toEqual([earlier]);
    await fs.writeFile('/etc/app/app.conf', 'ours');
    // The record kept what it said (what was there before machineadm first wrote it) and moved.
    expect(readdirSync(join(written, 'etc/app'))).toEqual([]);
    const records = await fs.written!.all();
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ path: '/etc/app/app.conf', before: earlier.before });
    expect(records[0]!.written).toHaveLength(1);
    expect(readdirSync(written)).toContain('%2Fetc%2Fapp%2Fapp.conf');
  });

  it('prefer the one side by side when a run killed after writing it left the earlier one too', async () => {
    const { fs, written } = machine();
    await fs.writeFile('/etc/app.conf', 'ours');
    const [current] = await fs.written!.all();
    mkdirSync(join(written, 'etc'), { recursive: true });
    writeFileSync(join(written, 'etc/app.conf'), JSON.stringify({ ...current, written: [] }));
    expect(await fs.written!.all()).toEqual([current]);
    expect(await fs.written!.read('/etc/app.conf')).toEqual(current);
  });

  it("clear the temporary records of writers killed before their rename, never a running writer's", async () => {
    const { fs, written } = machine();
    mkdirSync(written, { recursive: true });
    // pid 2^22 + 1 is above Linux's pid_max: no process has it.
    const dead = `.%2Fetc%2Fa.conf.machineadm-tmp-${2 ** 22 + 1}-0123456789ab`;
    const running = `.%2Fetc%2Fb.conf.machineadm-tmp-${process.ppid}-0123456789ab`;
    const runningLongAgo = `.%2Fetc%2Fc.conf.machineadm-tmp-${process.ppid}-ba9876543210`;
    for (const name of [dead, running, runningLongAgo]) writeFileSync(join(written, name), '{}');
    const hourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(join(written, runningLongAgo), hourAgo, hourAgo);
    await fs.writeFile('/etc/d.conf', 'x');
    expect(readdirSync(written).sort()).toEqual(['%2Fetc%2Fd.conf', running].sort());
  });
});
