// A file someone else changed since machineadm wrote it is named and not clobbered: reset's plan
// shows the refusal, reset itself exits 2 before changing anything, and --force gives it back.
// Older state (no records of written files) is said, not guessed at.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { REPO } from '../kubeadm/standin.ts';
import { ownReport, preparedMachine, snapshot, standin } from './machine.ts';

const QUICKSTART = join(REPO, 'examples', 'quickstart.yaml');

async function initialized(): Promise<{ dir: string; root: string; state: string; before: Record<string, string> }> {
  const dir = scratchDir('machineadm-reset-changed-');
  const root = preparedMachine(dir);
  const state = join(dir, 'state');
  const before = snapshot(root);
  const init = await runCli(['init', '-c', QUICKSTART, '--root', root, '--state-dir', state], { env: standin });
  expect(init.code, init.stderr).toBe(0);
  return { dir, root, state, before };
}


describe('reset and files changed by someone else', () => {
  it.each([
    ['a file machineadm created', 'etc/machineadm/motd'],
    ['a file machineadm replaced', 'etc/containerd/config.toml'],
  ])('%s and edited since is named by the plan, refused before any change (exit 2), and given back with --force', async (_, rel) => {
    const { root, state, before } = await initialized();
    writeFileSync(join(root, rel), 'edited by an operator\n');
    const edited = snapshot(root, ownReport);

    const plan = await runCli(['plan', 'reset', '--root', root, '--state-dir', state], { env: standin });
    expect(plan.code).toBe(2);
    expect(plan.stdout).toContain(`refuse /${rel} (changed since machineadm wrote it (by someone else): not clobbered`);
    expect(plan.stderr).toContain(`step reset/files would refuse /${rel}`);

    const refused = await runCli(['reset', '--root', root, '--state-dir', state], { env: standin });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`/${rel}`);
    expect(snapshot(root, ownReport)).toEqual(edited);
    expect(existsSync(state)).toBe(true);

    const forced = await runCli(['reset', '--force', '--root', root, '--state-dir', state], { env: standin });
    expect(forced.code, forced.stderr).toBe(0);
    expect(snapshot(root, ownReport)).toEqual(before);
  });

  it('is told by its content, not its times: a touch that keeps the bytes is still machineadm\'s, and reset gives the machine back', async () => {
    const { root, state, before } = await initialized();
    for (const rel of ['etc/machineadm/motd', 'etc/containerd/config.toml']) {
      const path = join(root, rel);
      writeFileSync(path, readFileSync(path));
      utimesSync(path, new Date('2030-01-01T00:00:00Z'), new Date('2030-01-01T00:00:00Z'));
    }
    const out = await runCli(['reset', '--root', root, '--state-dir', state], { env: standin });
    expect(out.code, out.stderr).toBe(0);
    expect(snapshot(root, ownReport)).toEqual(before);
  });

  it('is told by its content, not its times: an edit of the same size with its time put back is refused and named', async () => {
    const { dir, root, state } = await initialized();
    const rel = 'etc/machineadm/motd';
    const path = join(root, rel);
    const was = statSync(path);
    const text = readFileSync(path, 'utf8');
    // Same length, same inode (written in place), mtime set back to the nanosecond (touch -r): only the bytes tell.
    const times = join(dir, 'times');
    execFileSync('touch', ['-r', path, times]);
    writeFileSync(path, text.replace('machineadm', 'MACHINEADM'), { flag: 'r+' });
    execFileSync('touch', ['-r', times, path]);
    expect(statSync(path)).toMatchObject({ ino: was.ino, size: was.size, mtimeMs: was.mtimeMs });
    const edited = snapshot(root, ownReport);
    const refused = await runCli(['reset', '--root', root, '--state-dir', state], { env: standin });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`step reset/files would refuse /${rel}: changed since machineadm wrote it`);
    expect(snapshot(root, ownReport)).toEqual(edited);
  });

  it.each([
    ['out of the root', (dir: string) => dir],
    ['inside the root', () => '/etc/hostname'],
  ])('a file machineadm wrote that is a symbolic link now (%s) is named and refused, also with --force, and nothing is followed', async (_, target) => {
    const { dir, root, state } = await initialized();
    const rel = 'etc/machineadm/motd';
    rmSync(join(root, rel));
    symlinkSync(target(dir), join(root, rel));
    const edited = snapshot(root, ownReport);
    for (const force of [[], ['--force']]) {
      const refused = await runCli(['reset', ...force, '--root', root, '--state-dir', state], { env: standin });
      expect(refused.code, refused.stderr).toBe(2);
      expect(refused.stderr).toMatch(new RegExp(`step reset/files would refuse /${rel}: .*(symbolic link).*reset does not follow it`));
      expect(snapshot(root, ownReport)).toEqual(edited);
    }
  });

  it('a record an earlier version wrote (inode, size and time, no hash) is still told by them', async () => {
    const { root, state, before } = await initialized();
    const written = join(state, 'written');
    for (const name of readdirSync(written)) {
      const record = JSON.parse(readFileSync(join(written, name), 'utf8'));
      record.written = record.written.map(({ sha256: _, ...rest }: Record<string, unknown>) => rest);
      writeFileSync(join(written, name), JSON.stringify(record));
    }
    const edit = join(root, 'etc/machineadm/motd');
    writeFileSync(edit, 'edited by an operator\n');
    const refused = await runCli(['reset', '--root', root, '--state-dir', state], { env: standin });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('step reset/files would refuse /etc/machineadm/motd');
    const forced = await runCli(['reset', '--force', '--root', root, '--state-dir', state], { env: standin });
    expect(forced.code, forced.stderr).toBe(0);
    expect(snapshot(root, ownReport)).toEqual(before);
  });

  it('a file machineadm replaced and someone removed since is given back from the copy kept before the first run', async () => {
    const { root, state, before } = await initialized();
    rmSync(join(root, 'etc/containerd/config.toml'));
    const out = await runCli(['reset', '--root', root, '--state-dir', state], { env: standin });
    expect(out.code, out.stderr).toBe(0);
    expect(snapshot(root, ownReport)).toEqual(before);
    expect(readFileSync(join(root, 'etc/containerd/config.toml'), 'utf8')).toBe("version = 2\n# the image's own\n");
  });

  it('state from a machineadm that kept no records of written files: reset says it gives back no file, and leaves every file as it is (kubeadm is still reset)', async () => {
    const { dir, root, state } = await initialized();
    rmSync(join(state, 'written'), { recursive: true });
    const written = Object.entries(snapshot(root, ownReport)).filter(([rel]) => rel.startsWith('etc/') && !rel.startsWith('etc/kubernetes'));
    const out = await runCli(['reset', '--root', root, '--state-dir', state], { env: standin });
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain('this state directory has no records of the files machineadm wrote (an older machineadm made it)');
    expect(out.stdout).toMatch(/reset\/files warning/);
    expect(Object.entries(snapshot(root, ownReport)).filter(([rel]) => rel.startsWith('etc/') && !rel.startsWith('etc/kubernetes'))).toEqual(written);
    expect(readdirSync(dir).some((n) => n.startsWith('state.reset-'))).toBe(true);
  });
});
