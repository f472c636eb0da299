import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RootedFileSystem } from '../../src/host/index.ts';
import { EndpointSpool, endpointKey, isSpoolName, nextRunStamp, spoolName } from '../../src/report/spool.ts';
import { scratchDir } from '../support/tmp.ts';

describe('the spool', () => {
  it('names sort by run stamp, then run, then sequence', () => {
    const names = [spoolName(2000, 'b', 2), spoolName(1000, 'z', 10), spoolName(2000, 'b', 1), spoolName(1000, 'z', 9)];
    expect([...names].sort()).toEqual([spoolName(1000, 'z', 9), spoolName(1000, 'z', 10), spoolName(2000, 'b', 1), spoolName(2000, 'b', 2)]);
    expect(names.every(isSpoolName)).toBe(true);
    expect(isSpoolName('.0000000001000-z-000009.json.machineadm-tmp-ab')).toBe(false);
  });

  it('gives a new run a stamp above every spooled one, even when the clock went back', async () => {
    const stateFs = new RootedFileSystem(scratchDir());
    const spool = new EndpointSpool(stateFs, endpointKey('http://x/'));
    await spool.open();
    spool.appendSync(spoolName(5_000_000, 'old', 1), '{}');
    expect(await nextRunStamp(stateFs, 1_000)).toBe(5_000_001);
    expect(await nextRunStamp(stateFs, 9_000_000)).toBe(9_000_000);
  });

  it('writes each event durably with mode 0600 and keeps no temporary file', async () => {
    const dir = scratchDir();
    const stateFs = new RootedFileSystem(dir);
    const spool = new EndpointSpool(stateFs, 'k');
    await spool.open();
    spool.appendSync(spoolName(1, 'r', 1), '{"id":"r.000001"}');
    expect(readdirSync(join(dir, 'spool/k'))).toEqual([spoolName(1, 'r', 1)]);
    expect(statSync(join(dir, 'spool/k', spoolName(1, 'r', 1))).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'spool')).mode & 0o777).toBe(0o700);
    expect(await spool.read(spoolName(1, 'r', 1))).toBe('{"id":"r.000001"}');
  });

  it('removes what a killed write left behind when it opens, but not a write another process is making', async () => {
    const dir = scratchDir();
    const stateFs = new RootedFileSystem(dir);
    const spool = new EndpointSpool(stateFs, 'k');
    await spool.open();
    const name = spoolName(1, 'r', 1);
    const killed = `.${name}.machineadm-tmp-0123456789ab`;
    const inFlight = `.${spoolName(2, 's', 1)}.machineadm-tmp-ba9876543210`;
    writeFileSync(join(dir, 'spool/k', killed), '{"half":');
    const anHourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(join(dir, 'spool/k', killed), anHourAgo, anHourAgo);
    writeFileSync(join(dir, 'spool/k', inFlight), '{"being written":');
    spool.appendSync(name, '{}');
    await spool.open();
    expect(readdirSync(join(dir, 'spool/k')).sort()).toEqual([inFlight, name].sort());
    expect(await spool.pending()).toEqual([name]);
  });

  it('removes at once a fresh temporary file whose writer was killed, and keeps one whose writer runs', async () => {
    const dir = scratchDir();
    const spool = new EndpointSpool(new RootedFileSystem(dir), 'k');
    await spool.open();
    // A writer that has exited: its pid no longer names a process.
    const gone = spawnSync('true').pid!;
    const alive = spawn('sleep', ['30']);
    const killed = `.${spoolName(1, 'r', 1)}.machineadm-tmp-${gone}-0123456789ab`;
    const writing = `.${spoolName(2, 's', 1)}.machineadm-tmp-${alive.pid}-ba9876543210`;
    writeFileSync(join(dir, 'spool/k', killed), '{"half":');
    writeFileSync(join(dir, 'spool/k', writing), '{"being written":');
    await spool.open();
    alive.kill();
    expect(readdirSync(join(dir, 'spool/k'))).toEqual([writing]);
  });
});
