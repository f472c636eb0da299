// reset and the files of spec.files downloaded from a source (against a real server on 127.0.0.1):
// their downloads make the target's folders before the write, early, while the run starts; reset
// removes those folders with the file, keeps the folders that were there, and removes the
// temporary file a download killed with SIGKILL left in them (only machineadm's own).
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { REPO } from '../kubeadm/standin.ts';
import { ownReport, snapshot } from './machine.ts';

const NODE = join(REPO, 'node_modules', 'node', 'bin', 'node');
const TOOL = Buffer.from('a downloaded tool\n');
const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** /tool.bin whole; /stalled.bin its first bytes of many, then nothing more (a download in flight). */
const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  if (req.url === '/tool.bin') return void res.end(TOOL);
  if (req.url === '/stalled.bin') {
    res.writeHead(200, { 'content-length': String(64 << 20) });
    return void res.write(Buffer.alloc(64 * 1024, 0x61));
  }
  res.writeHead(404).end();
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
afterAll(() => {
  server.closeAllConnections();
  return new Promise((r) => server.close(r));
});

/** A root where /opt is the image's (and stays); machineadm makes /opt/vendor/bin for the download. */
function machine(spec: Record<string, unknown>): { dir: string; root: string; state: string; config: string } {
  const dir = scratchDir('machineadm-reset-downloads-');
  const root = join(dir, 'root');
  // /run is the machine's: reset reports itself in /run/machineadm.
  for (const folder of ['opt', 'run']) mkdirSync(join(root, folder), { recursive: true });
  writeFileSync(join(root, 'opt', 'image.txt'), 'the image\'s own\n');
  const config = join(dir, 'machine.yaml');
  writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec }));
  return { dir, root, state: join(dir, 'state'), config };
}

async function until(what: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!what()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** init of a download the server never finishes, killed with SIGKILL once its temporary file is beside the target. */
async function killedMidDownload(m: ReturnType<typeof machine>): Promise<string> {
  const child = spawn(NODE, ['src/cli/bin.ts', 'init', '-c', m.config, '--root', m.root, '--state-dir', m.state], { cwd: REPO, stdio: 'ignore' });
  const exited = new Promise((r) => child.once('exit', r));
  const folder = join(m.root, 'opt/vendor/bin');
  try {
    await until(() => existsSync(folder) && readdirSync(folder).some((n) => n.includes('.machineadm-tmp-')));
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
  const [temporary] = readdirSync(folder);
  expect(readdirSync(folder)).toEqual([temporary]);
  return `/opt/vendor/bin/${temporary}`;
}

describe('reset after init with a downloaded spec.files entry', () => {
  it('removes the downloaded file and the folders made for it, and keeps the folders that were there before', async () => {
    const m = machine({ files: [{ path: '/opt/vendor/bin/tool.bin', source: { url: `${base}/tool.bin`, sha256: sha256(TOOL) } }] });
    const before = snapshot(m.root);
    const init = await runCli(['init', '-c', m.config, '--root', m.root, '--state-dir', m.state]);
    expect(init.code, init.stdout + init.stderr).toBe(0);
    expect(readFileSync(join(m.root, 'opt/vendor/bin/tool.bin'))).toEqual(TOOL);

    const reset = await runCli(['reset', '--root', m.root, '--state-dir', m.state]);
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(snapshot(m.root, ownReport)).toEqual(before);
  }, 60_000);
});

describe('reset after a download killed with SIGKILL', () => {
  it('removes the temporary file the download left, says so, and then the folders made for it', async () => {
    const m = machine({ files: [{ path: '/opt/vendor/bin/big.bin', source: { url: `${base}/stalled.bin`, sha256: 'a'.repeat(64) } }] });
    const before = snapshot(m.root);
    const temporary = await killedMidDownload(m);

    const reset = await runCli(['reset', '--root', m.root, '--state-dir', m.state]);
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(reset.stdout + reset.stderr).toContain(`delete ${temporary}`);
    expect(snapshot(m.root, ownReport)).toEqual(before);
  }, 60_000);

  it('never removes an operator\'s file: one in a folder machineadm made keeps that folder, with the file in it', async () => {
    const m = machine({ files: [{ path: '/opt/vendor/bin/big.bin', source: { url: `${base}/stalled.bin`, sha256: 'a'.repeat(64) } }] });
    const temporary = await killedMidDownload(m);
    // Named like machineadm's temporaries, but of no file machineadm writes, and one of its own pid-less.
    const operators = ['.notes.machineadm-tmp-1-0123456789ab', '.big.bin.machineadm-tmp-old', 'notes.txt'];
    for (const name of operators) writeFileSync(join(m.root, 'opt/vendor/bin', name), 'the operator\'s\n');

    const reset = await runCli(['reset', '--root', m.root, '--state-dir', m.state]);
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(existsSync(join(m.root, temporary))).toBe(false);
    expect(readdirSync(join(m.root, 'opt/vendor/bin')).sort()).toEqual(operators.sort());
  }, 60_000);
});
