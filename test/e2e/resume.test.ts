// Reboot and resume with the packaged binary on Linux: a step asks for a reboot (a package left
// /run/reboot-required), the run registers its resume as a systemd unit under the scratch root and
// exits 4; after "the reboot" (a new boot id under the root, /run emptied) the unit's ExecStart is
// run exactly as written, the run goes on as the same run, joins, and removes the unit.
import { spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { binaryAndCollector, standinEnv } from '../support/machine-run.ts';
import { scratchDir } from '../support/tmp.ts';
import { REPO } from '../kubeadm/standin.ts';
import { makePki } from '../report/certs.ts';

const TOKEN = 'q1w2e3.r4t5y6u7i8o9p0a1';
const UNIT = 'etc/systemd/system/machineadm-resume.service';
const LINK = 'etc/systemd/system/multi-user.target.wants/machineadm-resume.service';

const machineRun = binaryAndCollector();

const env = standinEnv();

function run(argv: readonly string[]): Promise<{ status: number | null; out: string }> {
  const child = spawn(argv[0]!, argv.slice(1), { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, out })));
}

function machine(): { root: string; config: string } {
  const dir = scratchDir('machineadm-resume-');
  const root = join(dir, 'root');
  mkdirSync(join(root, 'proc/sys/kernel/random'), { recursive: true });
  writeFileSync(join(root, 'proc/sys/kernel/random/boot_id'), 'first-boot\n');
  mkdirSync(join(root, 'run'), { recursive: true });
  writeFileSync(join(root, 'run/reboot-required'), '*** System restart required ***\n');
  writeFileSync(join(root, 'run/reboot-required.pkgs'), 'linux-image-6.1.0-99-amd64\n');
  const config = join(dir, 'machine.yaml');
  writeFileSync(
    config,
    dump({
      apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1',
      kind: 'MachineConfig',
      spec: {
        rebootWhenRequired: true,
        files: [{ path: '/etc/machineadm/motd', content: 'x\n' }],
        kubernetes: { controlPlaneEndpoint: '10.0.0.10:6443', token: TOKEN, caCertHashes: ['sha256:' + 'ab'.repeat(32)], retries: 0, backoffSeconds: 0 },
        report: { clusterAPISentinel: true, deadlineSeconds: 5, endpoints: [{ url: machineRun.collector.url }] },
      },
    }),
  );
  return { root, config };
}

/** What a reboot does to the scratch machine: a new boot id, and /run (a tmpfs) emptied. */
function reboot(root: string, bootId: string): void {
  writeFileSync(join(root, 'proc/sys/kernel/random/boot_id'), `${bootId}\n`);
  rmSync(join(root, 'run'), { recursive: true, force: true });
  mkdirSync(join(root, 'run'));
}

/** The unit's ExecStart words, read as systemd reads them. */
function execStart(root: string): string[] {
  const line = readFileSync(join(root, UNIT), 'utf8').split('\n').find((l) => l.startsWith('ExecStart='))!;
  return [...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!.replace(/\\(.)/g, '$1').replace(/\$\$/g, '$').replace(/%%/g, '%'));
}

const json = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

describe('reboot and resume on Linux', () => {
  it('stops with exit 4, registers the resume unit, and the unit resumes the same run after the reboot', async () => {
    const m = machine();
    const first = await run([machineRun.binary, 'init', '-c', m.config, '--root', m.root]);
    expect(first.status, first.out).toBe(4);
    expect(first.out).toContain('/run/reboot-required says a reboot is pending (for linux-image-6.1.0-99-amd64)');
    expect(first.out).toContain(`not restarting: ${m.root} is a scratch root`);
    expect(existsSync(join(m.root, 'etc/kubernetes/kubelet.conf'))).toBe(false);
    expect(lstatSync(join(m.root, LINK)).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(m.root, UNIT), 'utf8')).toMatch(/After=network-online\.target[\s\S]*Type=oneshot/);
    const argv = execStart(m.root);
    // The unit runs `machineadm resume`; the command itself is in the state directory, readable by root only.
    const stateDir = join(m.root, 'var/lib/machineadm');
    expect(argv).toEqual([machineRun.binary, 'resume', '--state-dir', stateDir, '--root', m.root]);
    expect(statSync(join(m.root, UNIT)).mode & 0o777).toBe(0o644);
    expect(statSync(join(stateDir, 'resume.json')).mode & 0o777).toBe(0o600);
    expect(json(join(stateDir, 'resume.json'))).toMatchObject({ args: ['init', '-c', m.config, '--root', m.root, '--max-reboots', '3'], boots: 0 });
    const firstHalf = json(join(m.root, 'var/lib/machineadm/result.json'));
    expect(firstHalf).toMatchObject({ exitCode: 4, state: 'finished' });

    // Before the reboot, a rerun changes nothing and still says reboot.
    const early = await run([machineRun.binary, 'init', '-c', m.config, '--root', m.root]);
    expect(early.status, early.out).toBe(4);
    expect(early.out).toContain('the machine has not rebooted yet');
    const status = await run([machineRun.binary, 'status', '--root', m.root]);
    expect(status.out).toContain(`pending resume: the next boot runs ${argv.join(' ')} (registered `);

    reboot(m.root, 'second-boot');
    const resumed = await run(argv);
    expect(resumed.status, resumed.out).toBe(0);
    expect(existsSync(join(m.root, 'etc/kubernetes/kubelet.conf'))).toBe(true);
    expect(existsSync(join(m.root, 'run/cluster-api/bootstrap-success.complete'))).toBe(true);
    // The run is over: the unit, its link and the kept command are gone.
    expect(existsSync(join(m.root, UNIT))).toBe(false);
    expect(existsSync(join(stateDir, 'resume.json'))).toBe(false);
    expect(() => lstatSync(join(m.root, LINK))).toThrow();
    expect(json(join(m.root, 'var/lib/machineadm/state.json')).pendingReboot).toBeUndefined();

    // One report for both halves: one run id, events numbered on, phases of both boots.
    const whole = json(join(m.root, 'var/lib/machineadm/result.json'));
    expect(whole).toMatchObject({ runId: firstHalf.runId, state: 'finished', result: 'success', exitCode: 0 });
    expect(whole.resumedAt).toHaveLength(1);
    expect(whole.phases.map((p: { name: string }) => p.name)).toEqual(['prepare', 'prepare', 'provision', 'report']);
    expect(whole.phases[0].steps.find((s: { id: string }) => s.id === 'prepare/reboot-if-required')).toMatchObject({ result: 'warning' });
    const events = machineRun.collector.requests.flatMap((r) => r.events).filter((e) => String(e.id).startsWith(`${firstHalf.runId}.`));
    const seqOf = (id: unknown) => Number(String(id).slice(String(id).lastIndexOf('.') + 1));
    // No two events share an id (a resent one is the same event), and the resumed part numbers on.
    const byId = new Map<string, string>();
    for (const e of events) {
      const body = JSON.stringify(e);
      expect(byId.get(String(e.id)) ?? body, String(e.id)).toBe(body);
      byId.set(String(e.id), body);
    }
    const starts = events.filter((e) => e.type === 'io.machineadm.run.started').map((e) => seqOf(e.id)).sort((a, b) => a - b);
    expect(starts).toHaveLength(2);
    expect(starts[1]).toBeGreaterThan(seqOf(firstHalf.lastEventId));
    expect(events.filter((e) => e.type === 'io.machineadm.run.finished').map((e) => (e.data as { result: string }).result).sort()).toEqual(['success', 'warning']);

    // And the machine is converged: a second run changes nothing.
    const again = await run([machineRun.binary, 'init', '-c', m.config, '--root', m.root]);
    expect(again.status, again.out).toBe(0);
    expect(again.out).toMatch(/0 changed/);
  });

  it('counts starts of the resume before the reboot, or again in one boot, as no boot: it still resumes the run after the reboot', async () => {
    const m = machine();
    const first = await run([machineRun.binary, 'init', '-c', m.config, '--root', m.root]);
    expect(first.status, first.out).toBe(4);
    const launcher = execStart(m.root);
    // An operator who runs the registered command by hand before restarting, more often than the limit.
    for (let start = 1; start <= 4; start++) {
      const early = await run(launcher);
      expect(early.status, early.out).toBe(4);
      expect(existsSync(join(m.root, UNIT)), `still registered after start ${start}`).toBe(true);
    }
    expect(json(join(m.root, 'var/lib/machineadm/resume.json')).boots).toBe(0);

    reboot(m.root, 'second-boot');
    const resumed = await run(launcher);
    expect(resumed.status, resumed.out).toBe(0);
    expect(existsSync(join(m.root, 'etc/kubernetes/kubelet.conf'))).toBe(true);
    expect(existsSync(join(m.root, UNIT))).toBe(false);
  });

  it('stops with a failure when the run keeps asking for reboots past --max-reboots, and removes the unit', async () => {
    const m = machine();
    const first = await run([machineRun.binary, 'init', '-c', m.config, '--root', m.root, '--max-reboots', '1']);
    expect(first.status, first.out).toBe(4);
    // The package still wants a reboot after it: the marker comes back.
    reboot(m.root, 'second-boot');
    writeFileSync(join(m.root, 'run/reboot-required'), '*** System restart required ***\n');
    const resumed = await run(execStart(m.root));
    expect(resumed.status, resumed.out).toBe(1);
    expect(resumed.out).toContain('asked for reboot number 2 of this run');
    expect(resumed.out).toContain('the limit is 1');
    expect(existsSync(join(m.root, UNIT))).toBe(false);
    expect(existsSync(join(m.root, 'etc/kubernetes/kubelet.conf'))).toBe(false);
  });

  it("keeps a source URL's credentials out of the unit and status; a resume that keeps failing removes itself after 3 boots and says so", async () => {
    const m = machine();
    // The configuration from a URL with a user, a token and a signature (a local server).
    const { createServer } = await import('node:https');
    const pki = makePki(scratchDir('machineadm-resume-pki-'));
    const body = readFileSync(m.config);
    let serving = true;
    const server = createServer({ cert: pki.serverCert, key: pki.serverKey }, (_req, res) => {
      if (!serving) return void res.writeHead(503).end();
      res.writeHead(200, { 'content-type': 'application/yaml' }).end(body);
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const port = (server.address() as { port: number }).port;
    const source = `https://node:s3cr3t-t0ken@127.0.0.1:${port}/machine.yaml?sig=SIGNATURE-SECRET#ca=${pki.caFile}`;
    try {
      const first = await run([machineRun.binary, 'init', '-c', source, '--root', m.root]);
      expect(first.status, first.out).toBe(4);
      const unit = readFileSync(join(m.root, UNIT), 'utf8');
      const status = await run([machineRun.binary, 'status', '--root', m.root, '-o', 'json']);
      const statusText = await run([machineRun.binary, 'status', '--root', m.root]);
      for (const text of [unit, status.out, statusText.out, first.out]) {
        expect(text).not.toContain('s3cr3t-t0ken');
        expect(text).not.toContain('SIGNATURE-SECRET');
      }
      expect(json(join(m.root, 'var/lib/machineadm/resume.json')).args).toContain(source);

      // The source is gone after the reboot: every resumed run fails before it starts (exit 2).
      serving = false;
      const launcher = execStart(m.root);
      for (const boot of [1, 2, 3]) {
        reboot(m.root, `boot-${boot}`);
        const resumed = await run(launcher);
        expect(resumed.status, resumed.out).not.toBe(0);
        expect(existsSync(join(m.root, UNIT)), `still registered after boot ${boot}`).toBe(true);
      }
      reboot(m.root, 'boot-4');
      const last = await run(launcher);
      expect(last.status, last.out).toBe(1);
      expect(last.out).toMatch(/^error: machineadm resume: the run registered at \S+ was started at 3 boots without finishing \(limit 3\); the resume registration is removed and will not run again$/m);
      expect(existsSync(join(m.root, UNIT))).toBe(false);
      expect(() => lstatSync(join(m.root, LINK))).toThrow();
      const after = await run([machineRun.binary, 'status', '--root', m.root]);
      expect(after.out).toMatch(/^resume gave up at \S+: the run registered at \S+ was started at 3 boots without finishing \(limit 3\); it is no longer registered$/m);
      expect(JSON.stringify(json(join(m.root, 'var/lib/machineadm/resume.json')))).not.toContain('s3cr3t-t0ken');
    } finally {
      server.close();
    }
  });
});
