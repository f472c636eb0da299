// spec.kubernetes.install on a scratch root with no Kubernetes binaries, against a release server on
// 127.0.0.1 in the official layout (BASE/VERSION/bin/linux/ARCH/NAME with NAME.sha256; crictl and
// CNI plugin archives made by the real tar): plan shows every download, file and unit; init
// installs them and joins (kubeadm is the strict stand-in); a rerun downloads nothing; a wrong
// sha256 exits 3 with nothing installed; another binary in the way is refused before any change;
// the units pass the real systemd-analyze verify; reset gives the root back.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { standinEnv } from '../support/machine-run.ts';
import { REPO } from './standin.ts';
import { missingRequirement } from '../support/environment.ts';
import { startHttp, type RunningServer } from '../config/helpers/servers.ts';
import { ownReport, snapshot } from '../reset/machine.ts';

const VERSION = 'v1.31.2';
const ARCH = process.arch === 'x64' ? 'amd64' : process.arch;
const sha = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');
const BINARIES: Record<string, Buffer> = {
  // As kubeadm answers `config images list` for a worker's part (the rest is a control plane's).
  kubeadm: Buffer.from(`#!/bin/sh\nif [ "$1 $2 $3" = "config images list" ]; then echo registry.k8s.io/kube-proxy:${VERSION}; echo registry.k8s.io/pause:3.10; exit 0; fi\necho kubeadm ${VERSION}\n`),
  kubelet: Buffer.from(`#!/bin/sh\necho kubelet ${VERSION}\n`),
  kubectl: Buffer.from(`#!/bin/sh\necho kubectl ${VERSION}\n`),
};
const files = new Map<string, Buffer>();
let server: RunningServer;

function archive(dir: string, name: string, members: Record<string, string>, gzip = true): Buffer {
  const from = join(dir, `${name}-content`);
  mkdirSync(from, { recursive: true });
  for (const [member, text] of Object.entries(members)) writeFileSync(join(from, member), text, { mode: 0o755 });
  execFileSync('tar', [gzip ? '-czf' : '-cf', join(dir, name), '-C', from, ...Object.keys(members).map((m) => `./${m}`)]);
  return readFileSync(join(dir, name));
}

beforeAll(async () => {
  const dir = scratchDir();
  for (const [name, bytes] of Object.entries(BINARIES)) {
    files.set(`/release/${VERSION}/bin/linux/${ARCH}/${name}`, bytes);
    files.set(`/release/${VERSION}/bin/linux/${ARCH}/${name}.sha256`, Buffer.from(sha(bytes)));
  }
  const crictl = archive(dir, 'crictl.tar.gz', { crictl: '#!/bin/sh\necho crictl\n' });
  files.set('/crictl.tar.gz', crictl);
  files.set('/crictl.tar.gz.sha256', Buffer.from(`${sha(crictl)}  crictl.tar.gz\n`));
  const cni = archive(dir, 'cni.tgz', { bridge: 'bridge plugin', 'host-local': 'host-local plugin', loopback: 'loopback plugin' });
  files.set('/cni.tgz', cni);
  files.set('/cni.tgz.sha256', Buffer.from(`${sha(cni)}  cni.tgz\n`));
  // A later release that no longer has one of the plugins.
  const cniNext = archive(dir, 'cni-next.tgz', { bridge: 'bridge plugin, next', 'host-local': 'host-local plugin, next' });
  files.set('/cni-next.tgz', cniNext);
  files.set('/cni-next.tgz.sha256', Buffer.from(`${sha(cniNext)}  cni-next.tgz\n`));
  // A docker-archive naming one image (its layers do not matter to a bundle).
  const image = archive(dir, 'pause.tar', { 'manifest.json': JSON.stringify([{ Config: 'config.json', RepoTags: ['registry.k8s.io/pause:3.10'], Layers: [] }]), 'config.json': '{}' }, false);
  files.set('/pause.tar', image);
  const proxy = archive(dir, 'kube-proxy.tar', { 'manifest.json': JSON.stringify([{ Config: 'config.json', RepoTags: [`registry.k8s.io/kube-proxy:${VERSION}`], Layers: [] }]), 'config.json': '{}' }, false);
  files.set('/kube-proxy.tar', proxy);
  server = await startHttp((req, res) => {
    const body = files.get(req.url ?? '');
    res.writeHead(body ? 200 : 404, { 'content-type': 'application/octet-stream' });
    res.end(body ?? 'not found');
  });
});
afterAll(() => server.close());

function machine(install: Record<string, unknown> = {}, setup?: (root: string) => void) {
  const dir = scratchDir('machineadm-install-');
  const m = { dir, root: join(dir, 'root'), state: join(dir, 'state'), config: join(dir, 'machine.yaml') };
  for (const d of ['etc', 'run']) mkdirSync(join(m.root, d), { recursive: true });
  writeFileSync(join(m.root, 'etc/hostname'), 'node-1\n');
  setup?.(m.root);
  const spec = {
    kubernetes: {
      version: VERSION,
      controlPlaneEndpoint: '10.0.0.10:6443',
      token: 'abcdef.0123456789abcdef',
      caCertHashes: [`sha256:${'ab'.repeat(32)}`],
      install: { baseUrl: `${server.url}/release`, crictl: { version: 'v1.31.1', url: `${server.url}/crictl.tar.gz` }, cniPlugins: { version: 'v1.5.1', url: `${server.url}/cni.tgz` }, ...install },
    },
    report: { clusterAPISentinel: false },
  };
  writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec }, { lineWidth: -1 }));
  return m;
}

const noContainerd = missingRequirement({ commands: ['containerd'] });

/** The sandbox image the real containerd here runs when its configuration names none. */
function containerdDefaultSandbox(): string | undefined {
  const dumped = spawnSync('containerd', ['config', 'default'], { encoding: 'utf8' });
  if (dumped.status !== 0) return undefined;
  return /^\s*(?:sandbox_image|sandbox)\s*=\s*"([^"]+)"/m.exec(dumped.stdout)?.[1];
}

const run = (m: ReturnType<typeof machine>, args: string[]) => runCli([...args, '-c', m.config, '--root', m.root, '--state-dir', m.state], { env: standinEnv() });
const downloads = () => server.requests.filter((r) => !r.url.endsWith('.sha256')).length;

describe('spec.kubernetes.install', () => {
  it('plans, installs and joins from a root without Kubernetes; a rerun downloads nothing; reset gives the root back', async () => {
    const m = machine();
    const before = snapshot(m.root);
    const plan = await run(m, ['plan']);
    expect(plan.code, plan.stderr).toBe(0);
    for (const name of Object.keys(BINARIES)) expect(plan.stdout).toContain(`create /usr/local/bin/${name} (${name} ${VERSION} from ${server.url}/release/${VERSION}/bin/linux/${ARCH}/${name} (sha256 ${sha(BINARIES[name]!).slice(0, 12)}...), mode 0755)`);
    expect(plan.stdout).toContain(`extract /usr/local/bin (crictl from ${server.url}/crictl.tar.gz`);
    expect(plan.stdout).toContain(`extract /opt/cni/bin (cni-plugins from ${server.url}/cni.tgz`);
    expect(plan.stdout).toContain('create /etc/systemd/system/kubelet.service');
    expect(plan.stdout).toContain('create /etc/systemd/system/kubelet.service.d/10-kubeadm.conf');
    expect(plan.stdout).toContain('enable kubelet.service (link /etc/systemd/system/multi-user.target.wants/kubelet.service -> ../kubelet.service)');
    expect(downloads()).toBe(0);

    const init = await run(m, ['init']);
    expect(init.code, init.stdout + init.stderr).toBe(0);
    for (const [name, bytes] of Object.entries(BINARIES)) {
      expect(readFileSync(join(m.root, 'usr/local/bin', name))).toEqual(bytes);
      expect(statSync(join(m.root, 'usr/local/bin', name)).mode & 0o777).toBe(0o755);
    }
    expect(readFileSync(join(m.root, 'usr/local/bin/crictl'), 'utf8')).toBe('#!/bin/sh\necho crictl\n');
    for (const plugin of ['bridge', 'host-local', 'loopback']) expect(readFileSync(join(m.root, 'opt/cni/bin', plugin), 'utf8')).toBe(`${plugin} plugin`);
    expect(readlinkSync(join(m.root, 'etc/systemd/system/multi-user.target.wants/kubelet.service'))).toBe('../kubelet.service');
    expect(existsSync(join(m.root, 'etc/kubernetes/kubelet.conf'))).toBe(true);
    expect(existsSync(join(m.root, 'run/machineadm/install'))).toBe(false);

    // The units as systemd reads them, with the kubelet where it is on this machine.
    const unitDir = join(m.dir, 'units');
    mkdirSync(join(unitDir, 'kubelet.service.d'), { recursive: true });
    const real = (path: string) => readFileSync(join(m.root, path), 'utf8').replaceAll('/usr/local/bin/kubelet', join(m.root, 'usr/local/bin/kubelet'));
    writeFileSync(join(unitDir, 'kubelet.service'), real('etc/systemd/system/kubelet.service'));
    writeFileSync(join(unitDir, 'kubelet.service.d/10-kubeadm.conf'), real('etc/systemd/system/kubelet.service.d/10-kubeadm.conf'));
    const verify = execFileSync('systemd-analyze', ['verify', join(unitDir, 'kubelet.service')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    expect(verify).toBe('');

    const fetched = downloads();
    const again = await run(m, ['init']);
    expect(again.code, again.stderr).toBe(0);
    expect(downloads()).toBe(fetched);
    const plan2 = await run(m, ['plan']);
    expect(plan2.stdout).toMatch(/prepare\/kubernetes\/install: .*\[up to date\]/);
    expect(plan2.stdout).toMatch(/prepare\/kubernetes\/kubelet-unit: .*\[up to date\]/);

    const reset = await runCli(['reset', '--root', m.root, '--state-dir', m.state], { env: standinEnv() });
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(existsSync(join(m.root, 'usr/local/bin/kubeadm'))).toBe(false);
    expect(() => lstatSync(join(m.root, 'etc/systemd/system/multi-user.target.wants/kubelet.service'))).toThrow();
    expect(existsSync(join(m.root, 'opt/cni/bin/bridge'))).toBe(false);
    expect(snapshot(m.root, ownReport)).toEqual(before);
  });

  it('begins the downloads with the run, while containerd is configured before it', async () => {
    const m = machine({ crictl: undefined, cniPlugins: undefined });
    writeFileSync(m.config, readFileSync(m.config, 'utf8').replace('spec:\n', 'spec:\n  containerd:\n    cgroupDriver: systemd\n'));
    const init = await run(m, ['init', '-o', 'json']);
    expect(init.code, init.stderr).toBe(0);
    const events = init.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { type: string; step?: string; sinceStartMs?: number; earlyStartMs?: number });
    const started = events.find((e) => e.type === 'step.started' && e.step === 'prepare/kubernetes/install')!;
    const finished = events.find((e) => e.type === 'step.finished' && e.step === 'prepare/kubernetes/install')!;
    const containerd = events.find((e) => e.type === 'step.started' && e.step === 'prepare/containerd/config')!;
    expect(finished.earlyStartMs).toBeDefined();
    expect(finished.earlyStartMs!).toBeLessThanOrEqual(containerd.sinceStartMs!);
    expect(finished.earlyStartMs!).toBeLessThan(started.sinceStartMs!);
    for (const [name, bytes] of Object.entries(BINARIES)) expect(readFileSync(join(m.root, 'usr/local/bin', name))).toEqual(bytes);
  });

  it('takes a binary from a source of its own (a file on this machine), with the sha256 beside it', async () => {
    const m = machine({ crictl: undefined, cniPlugins: undefined });
    const local = join(m.dir, 'kubelet-patched');
    const bytes = Buffer.from('#!/bin/sh\necho a patched kubelet\n');
    writeFileSync(local, bytes);
    writeFileSync(`${local}.sha256`, `${sha(bytes)}  kubelet-patched\n`);
    writeFileSync(m.config, readFileSync(m.config, 'utf8').replace('    install:\n', `    install:\n      urls: { kubelet: "file://${local}" }\n`));
    const asked = server.requests.length;
    const plan = await run(m, ['plan']);
    expect(plan.stdout).toContain(`create /usr/local/bin/kubelet (kubelet ${VERSION} from file://${local} (sha256 ${sha(bytes).slice(0, 12)}...)`);
    const init = await run(m, ['init']);
    expect(init.code, init.stderr).toBe(0);
    expect(readFileSync(join(m.root, 'usr/local/bin/kubelet'))).toEqual(bytes);
    expect(server.requests.slice(asked).map((r) => r.url).filter((u) => u.includes('kubelet'))).toEqual([]);
  });

  it('refuses a binary whose sha256 does not match (exit 3), installing nothing', async () => {
    const m = machine({ sha256: { kubelet: 'f'.repeat(64) } });
    const init = await run(m, ['init']);
    expect(init.code).toBe(3);
    expect(init.stderr).toContain('spec.kubernetes.install.sha256.kubelet: ');
    expect(init.stderr).toContain('expected ffffffff');
    for (const name of [...Object.keys(BINARIES), 'crictl']) expect(existsSync(join(m.root, 'usr/local/bin', name))).toBe(false);
    expect(existsSync(join(m.root, 'opt/cni/bin/bridge'))).toBe(false);
    expect(existsSync(join(m.root, 'etc/systemd/system/kubelet.service'))).toBe(false);
  });

  it('refuses another kubeadm in the way before any change (exit 2), and replaces it when asked', async () => {
    const other = (root: string) => {
      mkdirSync(join(root, 'usr/local/bin'), { recursive: true });
      writeFileSync(join(root, 'usr/local/bin/kubeadm'), '#!/bin/sh\necho kubeadm v1.30.0\n', { mode: 0o755 });
    };
    const m = machine({}, other);
    const init = await run(m, ['init']);
    expect(init.code).toBe(2);
    expect(init.stderr).toContain('/usr/local/bin/kubeadm is already there and is not kubeadm v1.31.2');
    expect(init.stderr).toContain('replace: true');
    expect(existsSync(join(m.root, 'usr/local/bin/kubelet'))).toBe(false);
    const replacing = machine({ replace: true }, other);
    const plan = await run(replacing, ['plan']);
    expect(plan.stdout).toContain('replace /usr/local/bin/kubeadm (kubeadm v1.31.2');
    const done = await run(replacing, ['init']);
    expect(done.code, done.stderr).toBe(0);
    expect(readFileSync(join(replacing.root, 'usr/local/bin/kubeadm'))).toEqual(BINARIES.kubeadm);
  });

  it.each([
    ['0644, as Ignition leaves a file written without a mode', 0o644],
    ['0777, writable by anyone', 0o777],
  ])('gives mode 0755 to a binary in place with the expected sha256 but mode %s, without downloading it', async (_what, mode) => {
    const m = machine({ crictl: undefined, cniPlugins: undefined }, (root) => {
      mkdirSync(join(root, 'usr/local/bin'), { recursive: true });
      writeFileSync(join(root, 'usr/local/bin/kubelet'), BINARIES.kubelet!);
      chmodSync(join(root, 'usr/local/bin/kubelet'), mode);
    });
    const plan = await run(m, ['plan']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain(`chmod /usr/local/bin/kubelet (mode 0${mode.toString(8)} -> 0755`);
    const asked = server.requests.length;
    const init = await run(m, ['init']);
    expect(init.code, init.stdout + init.stderr).toBe(0);
    expect(statSync(join(m.root, 'usr/local/bin/kubelet')).mode & 0o7777).toBe(0o755);
    expect(server.requests.slice(asked).map((r) => r.url).filter((u) => u.endsWith('/kubelet'))).toEqual([]);
    const again = await run(m, ['plan']);
    expect(again.stdout).toMatch(/prepare\/kubernetes\/install: .*\[up to date\]/);
  });

  it("removes the CNI plugins of the release it installed before that a new cniPlugins release lacks, and leaves the operator's", async () => {
    const m = machine({ crictl: undefined }, (root) => {
      mkdirSync(join(root, 'opt/cni/bin'), { recursive: true });
      writeFileSync(join(root, 'opt/cni/bin/calico'), 'the operator\'s plugin', { mode: 0o755 });
    });
    const before = snapshot(m.root);
    expect((await run(m, ['init'])).code).toBe(0);
    expect(readFileSync(join(m.root, 'opt/cni/bin/loopback'), 'utf8')).toBe('loopback plugin');
    writeFileSync(m.config, readFileSync(m.config, 'utf8').replace(`${server.url}/cni.tgz`, `${server.url}/cni-next.tgz`).replace('v1.5.1', 'v1.6.0'));
    const upgrade = await run(m, ['init']);
    expect(upgrade.code, upgrade.stdout + upgrade.stderr).toBe(0);
    expect(readFileSync(join(m.root, 'opt/cni/bin/bridge'), 'utf8')).toBe('bridge plugin, next');
    expect(existsSync(join(m.root, 'opt/cni/bin/loopback'))).toBe(false);
    expect(readFileSync(join(m.root, 'opt/cni/bin/calico'), 'utf8')).toBe('the operator\'s plugin');
    const plan = await run(m, ['plan']);
    expect(plan.stdout).toMatch(/prepare\/kubernetes\/install: .*\[up to date\]/);
    const reset = await runCli(['reset', '--root', m.root, '--state-dir', m.state], { env: standinEnv() });
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(snapshot(m.root, ownReport)).toEqual(before);
  });

  it("refuses before any change (exit 2) a distribution's kubelet drop-in read after 10-kubeadm.conf that runs another kubelet, and takes one spec.files masks", async () => {
    // Fedora's kubernetes-kubeadm names its drop-in kubeadm.conf: systemd reads it after 10-kubeadm.conf.
    const fedora = (root: string) => {
      mkdirSync(join(root, 'usr/lib/systemd/system/kubelet.service.d'), { recursive: true });
      writeFileSync(join(root, 'usr/lib/systemd/system/kubelet.service.d/kubeadm.conf'), '[Service]\nEnvironmentFile=-/etc/sysconfig/kubelet\nExecStart=\nExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS\n');
      // What systemd-analyze verify --root needs to load a unit.
      for (const unit of ['sysinit.target', 'basic.target', 'shutdown.target', 'multi-user.target', 'network-online.target', 'system.slice', '-.slice']) writeFileSync(join(root, 'usr/lib/systemd/system', unit), '[Unit]\n');
    };
    const m = machine({ crictl: undefined, cniPlugins: undefined }, fedora);
    const init = await run(m, ['init']);
    expect(init.code).toBe(2);
    expect(init.stderr).toContain('/usr/lib/systemd/system/kubelet.service.d/kubeadm.conf');
    expect(init.stderr).toContain('/usr/bin/kubelet, not the kubelet spec.kubernetes.install puts at /usr/local/bin/kubelet');
    expect(existsSync(join(m.root, 'usr/local/bin'))).toBe(false);

    const masked = machine({ crictl: undefined, cniPlugins: undefined }, fedora);
    writeFileSync(masked.config, readFileSync(masked.config, 'utf8').replace('spec:\n', 'spec:\n  files:\n    - { path: /etc/systemd/system/kubelet.service.d/kubeadm.conf, content: "" }\n'));
    for (let i = 0; i < 2; i++) {
      const done = await run(masked, ['init']);
      expect(done.code, done.stdout + done.stderr).toBe(0);
    }
    // The kubelet systemd runs is the one installed (it would say /usr/bin/kubelet is not executable).
    const verify = spawnSync('systemd-analyze', ['verify', `--root=${masked.root}`, 'kubelet.service'], { encoding: 'utf8' });
    expect(verify.stdout + verify.stderr).toBe('');
  });

  // A link at a path the kubelet-unit step writes was refused only at that step, after the
  // binaries were in place. Under --root a link to /dev/null would leave the root: the links of the
  // last three cases point inside it, as a masked unit's does on the machine itself.
  it.each([
    ['kubelet.service masked (a link to /dev/null)', 'etc/systemd/system/kubelet.service', '/dev/null', '', ['/etc/systemd/system/kubelet.service is masked (a link to /dev/null)', 'systemctl unmask kubelet']],
    ['kubelet.service a link made by systemctl link', 'etc/systemd/system/kubelet.service', '../../../opt/units/kubelet.service', 'opt/units/kubelet.service', ['/etc/systemd/system/kubelet.service is a link to ../../../opt/units/kubelet.service', 'remove the link']],
    ['the 10-kubeadm.conf drop-in a link', 'etc/systemd/system/kubelet.service.d/10-kubeadm.conf', '../../../../opt/units/10-kubeadm.conf', 'opt/units/10-kubeadm.conf', ['/etc/systemd/system/kubelet.service.d/10-kubeadm.conf is a link to ../../../../opt/units/10-kubeadm.conf', 'remove the link']],
    ['the multi-user.target.wants folder a link to no folder', 'etc/systemd/system/multi-user.target.wants', '../../../opt/units/null', 'opt/units/null', ['/etc/systemd/system/multi-user.target.wants is a link to ../../../opt/units/null, not a folder', 'remove the link']],
  ])('refuses before any change (exit 2) with %s, naming the path and what to do', async (_what, at, to, file, messages) => {
    const m = machine({ crictl: undefined, cniPlugins: undefined }, (root) => {
      mkdirSync(join(root, at, '..'), { recursive: true });
      if (file) {
        mkdirSync(join(root, file, '..'), { recursive: true });
        writeFileSync(join(root, file), '[Unit]\n');
      }
      symlinkSync(to, join(root, at));
    });
    const before = snapshot(m.root, ownReport);
    const plan = await run(m, ['plan']);
    expect(plan.code, plan.stdout + plan.stderr).toBe(2);
    const init = await run(m, ['init']);
    expect(init.code, init.stdout + init.stderr).toBe(2);
    for (const message of messages) {
      expect(plan.stderr).toContain(message);
      expect(init.stderr).toContain(message);
    }
    expect(snapshot(m.root, ownReport)).toEqual(before);
  });

  // mkdir(2) takes the umask off the mode asked for: under 077 (a hardened image's, for root)
  // /usr/local/bin was made 0700, and only root could run kubectl.
  it('makes the folders it creates 0755 under a umask of 077, with its files keeping their modes', async () => {
    const m = machine();
    const child = spawn('sh', ['-c', 'umask 077 && exec "$@"', 'sh', join(REPO, 'node_modules/.bin/node'), join(REPO, 'src/cli/bin.ts'), 'init', '-c', m.config, '--root', m.root, '--state-dir', m.state], { env: standinEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(code, output).toBe(0);
    const modeOf = (path: string) => (statSync(join(m.root, path)).mode & 0o7777).toString(8);
    for (const folder of ['usr', 'usr/local', 'usr/local/bin', 'opt', 'opt/cni', 'opt/cni/bin', 'etc/systemd', 'etc/systemd/system', 'etc/systemd/system/kubelet.service.d', 'etc/systemd/system/multi-user.target.wants']) {
      expect([folder, modeOf(folder)]).toEqual([folder, '755']);
    }
    for (const binary of ['usr/local/bin/kubelet', 'usr/local/bin/crictl', 'opt/cni/bin/bridge']) expect([binary, modeOf(binary)]).toEqual([binary, '755']);
    for (const unit of ['etc/systemd/system/kubelet.service', 'etc/systemd/system/kubelet.service.d/10-kubeadm.conf']) expect([unit, modeOf(unit)]).toEqual([unit, '644']);
    // The run's own folder stays private, as under any umask.
    expect(modeOf('run/machineadm')).toBe('700');
  });

  it('installs into /opt/bin when /usr is read-only, and the units name the kubelet there', async () => {
    const m = machine({ crictl: undefined, cniPlugins: undefined }, (root) => {
      mkdirSync(join(root, 'proc/self'), { recursive: true });
      writeFileSync(join(root, 'proc/self/mountinfo'), '22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda9 rw\n23 22 253:1 / /usr ro,relatime shared:2 - ext4 /dev/mapper/usr ro\n');
    });
    const init = await run(m, ['init']);
    expect(init.code, init.stderr).toBe(0);
    expect(existsSync(join(m.root, 'opt/bin/kubelet'))).toBe(true);
    expect(existsSync(join(m.root, 'usr/local/bin/kubelet'))).toBe(false);
    expect(readFileSync(join(m.root, 'etc/systemd/system/kubelet.service.d/10-kubeadm.conf'), 'utf8')).toContain('ExecStart=/opt/bin/kubelet $KUBELET_KUBECONFIG_ARGS');
  });

  const images = (...names: string[]) => names.map((name) => ({ url: `${server.url}/${name}.tar`, sha256: sha(files.get(`/${name}.tar`)!) }));

  it('refuses an --offline run from a bundle before any change (exit 2) when an image kubeadm needs is in no archive and behind no mirror', async () => {
    const m = machine({ images: images('pause') });
    const bundle = join(m.dir, 'bundle');
    expect((await runCli(['bundle', '-c', m.config, '-d', bundle, '--platform', `linux-${process.arch}`])).code).toBe(0);
    const target = machine();
    const init = await runCli(['init', '--offline', '--bundle', bundle, '--root', target.root, '--state-dir', target.state], { env: standinEnv() });
    expect(init.code).toBe(2);
    expect(init.stderr).toContain(`spec.kubernetes.install.images: --offline: registry.k8s.io/kube-proxy:${VERSION} (which a worker of ${VERSION} needs`);
    expect(init.stderr).not.toContain('pause:3.10');
    expect(existsSync(join(target.root, 'usr/local/bin'))).toBe(false);
    // Behind a mirror of the site's, it is there to pull.
    const mirrored = machine({ images: images('pause') });
    writeFileSync(mirrored.config, readFileSync(mirrored.config, 'utf8').replace('spec:\n', 'spec:\n  containerd:\n    registries:\n      registry.k8s.io:\n        mirrors: [{ url: "https://mirror.internal.example:5000" }]\n'));
    const mirroredBundle = join(mirrored.dir, 'bundle');
    expect((await runCli(['bundle', '-c', mirrored.config, '-d', mirroredBundle, '--platform', `linux-${process.arch}`])).code).toBe(0);
    const plan = await runCli(['plan', '--offline', '--bundle', mirroredBundle, '--root', target.root, '--state-dir', target.state], { env: standinEnv() });
    expect(plan.stdout + plan.stderr).not.toContain('kube-proxy');
  });

  it('asks an --offline run for the sandbox image spec.containerd.sandboxImage names, not the pause image kubeadm lists', async () => {
    const m = machine({ images: images('pause', 'kube-proxy') });
    writeFileSync(m.config, readFileSync(m.config, 'utf8').replace('spec:\n', 'spec:\n  containerd:\n    sandboxImage: registry.example/k8s/pause:3.9\n'));
    const bundle = join(m.dir, 'bundle');
    expect((await runCli(['bundle', '-c', m.config, '-d', bundle, '--platform', `linux-${process.arch}`])).code).toBe(0);
    const target = machine();
    const init = await runCli(['init', '--offline', '--bundle', bundle, '--root', target.root, '--state-dir', target.state], { env: standinEnv() });
    expect(init.code).toBe(2);
    expect(init.stderr).toContain('spec.kubernetes.install.images: --offline: registry.example/k8s/pause:3.9 (which a worker');
    expect(init.stderr).not.toContain('registry.k8s.io/pause:3.10');
    expect(existsSync(join(target.root, 'usr/local/bin'))).toBe(false);
  });

  // Pods run the sandbox image containerd is configured with; without spec.containerd.sandboxImage
  // that is the one the machine's config.toml or containerd itself gives, which need not be the
  // pause image kubeadm lists (containerd 1.6 runs pause:3.6, kubeadm v1.31 lists pause:3.10).
  it('asks an --offline run without spec.containerd.sandboxImage for the sandbox image named by the containerd config.toml of the machine', async () => {
    const m = machine({ images: images('pause', 'kube-proxy') });
    const bundle = join(m.dir, 'bundle');
    expect((await runCli(['bundle', '-c', m.config, '-d', bundle, '--platform', `linux-${process.arch}`])).code).toBe(0);
    const target = machine(undefined, (root) => {
      mkdirSync(join(root, 'etc/containerd'), { recursive: true });
      writeFileSync(join(root, 'etc/containerd/config.toml'), 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "registry.example/site/pause:3.9"\n');
    });
    const init = await runCli(['init', '--offline', '--bundle', bundle, '--root', target.root, '--state-dir', target.state], { env: standinEnv() });
    expect(init.code, init.stdout + init.stderr).toBe(2);
    expect(init.stderr).toContain('spec.kubernetes.install.images: --offline: registry.example/site/pause:3.9 (which a worker');
    expect(existsSync(join(target.root, 'usr/local/bin'))).toBe(false);
  });

  it.skipIf(noContainerd)('asks an --offline run whose spec.containerd names no sandbox image for the one containerd runs by default', async () => {
    const sandbox = containerdDefaultSandbox();
    expect(sandbox, 'containerd config default names a sandbox image').toBeDefined();
    const m = machine({ images: images('pause', 'kube-proxy') });
    writeFileSync(m.config, readFileSync(m.config, 'utf8').replace('spec:\n', 'spec:\n  containerd:\n    cgroupDriver: systemd\n'));
    const bundle = join(m.dir, 'bundle');
    expect((await runCli(['bundle', '-c', m.config, '-d', bundle, '--platform', `linux-${process.arch}`])).code).toBe(0);
    const target = machine();
    const init = await runCli(['init', '--offline', '--bundle', bundle, '--root', target.root, '--state-dir', target.state], { env: standinEnv() });
    // The bundle holds kubeadm's pause:3.10: enough only where containerd runs that one too.
    if (sandbox === 'registry.k8s.io/pause:3.10') {
      expect(init.code, init.stdout + init.stderr).toBe(0);
    } else {
      expect(init.code, init.stdout + init.stderr).toBe(2);
      expect(init.stderr).toContain(`spec.kubernetes.install.images: --offline: ${sandbox} (which a worker`);
    }
  });

  it('gathers every piece into machineadm bundle, from which an --offline init installs them with no network', async () => {
    const m = machine({ images: images('pause', 'kube-proxy') });
    // The pause image the bundle holds is the one containerd is told to run (its own default is its release's).
    writeFileSync(m.config, readFileSync(m.config, 'utf8').replace('spec:\n', 'spec:\n  containerd:\n    sandboxImage: registry.k8s.io/pause:3.10\n'));
    const bundle = join(m.dir, 'bundle');
    const built = await runCli(['bundle', '-c', m.config, '-d', bundle, '--platform', `linux-${process.arch}`]);
    expect(built.code, built.stderr).toBe(0);
    expect(readFileSync(join(bundle, `install/release/${VERSION}/bin/linux/${ARCH}/kubelet`))).toEqual(BINARIES.kubelet);
    expect(readFileSync(join(bundle, `install/release/${VERSION}/bin/linux/${ARCH}/kubelet.sha256`), 'utf8')).toBe(`${sha(BINARIES.kubelet!)}\n`);
    expect(readFileSync(join(bundle, 'SHA256SUMS'), 'utf8')).toContain(`install/cni-plugins-linux-${ARCH}.tar.gz`);
    expect(readFileSync(join(bundle, 'install/images/0-pause.tar'))).toEqual(files.get('/pause.tar'));
    expect(readFileSync(join(bundle, 'config.yaml'), 'utf8')).toContain('url: install/images/0-pause.tar');
    const asked = server.requests.length;
    const target = machine();
    const init = await runCli(['init', '--offline', '--bundle', bundle, '--root', target.root, '--state-dir', target.state], { env: standinEnv() });
    expect(init.code, init.stdout + init.stderr).toBe(0);
    expect(server.requests.length).toBe(asked);
    expect(readFileSync(join(target.root, 'usr/local/bin/kubeadm'))).toEqual(BINARIES.kubeadm);
    expect(readFileSync(join(target.root, 'opt/cni/bin/bridge'), 'utf8')).toBe('bridge plugin');
  });

  it('refuses a bundle made for another platform before any change (exit 2), naming the platform it lacks and the --platform to make it with', async () => {
    const other = process.arch === 'x64' ? 'arm64' : 'x64';
    const otherArch = other === 'x64' ? 'amd64' : other;
    for (const [name, bytes] of Object.entries(BINARIES)) {
      files.set(`/release/${VERSION}/bin/linux/${otherArch}/${name}`, bytes);
      files.set(`/release/${VERSION}/bin/linux/${otherArch}/${name}.sha256`, Buffer.from(sha(bytes)));
    }
    const m = machine();
    const bundle = join(m.dir, 'bundle');
    const built = await runCli(['bundle', '-c', m.config, '-d', bundle, '--platform', `linux-${other}`]);
    expect(built.code, built.stderr).toBe(0);
    const target = machine();
    const before = snapshot(target.root);
    for (const command of ['plan', 'init']) {
      const refused = await runCli([command, '--offline', '--bundle', bundle, '--root', target.root, '--state-dir', target.state], { env: standinEnv() });
      expect(refused.code, refused.stdout + refused.stderr).toBe(2);
      expect(refused.stderr).toContain('spec.kubernetes.install.baseUrl: ');
      expect(refused.stderr).toContain(`has nothing for this machine's platform, linux/${ARCH}`);
      expect(refused.stderr).toContain(`--platform linux-${process.arch}`);
      // A refusal of the configuration, as init prints it, not a step that failed.
      expect([command, refused.stderr]).toEqual([command, expect.stringMatching(/^error: invalid configuration \(\d problems?\):\n {2}spec\.kubernetes\.install\.baseUrl: /)]);
      expect(refused.stderr).not.toContain('step prepare/kubernetes/install failed');
    }
    expect(snapshot(target.root)).toEqual(before);
  });

  it('finds what it installed in place on an --offline rerun, without the sha256 files it read online', async () => {
    const m = machine();
    writeFileSync(m.config, readFileSync(m.config, 'utf8').replace('spec:\n', 'spec:\n  containerd:\n    registries:\n      _default:\n        mirrors: [{ url: "https://mirror.internal.example:5000" }]\n'));
    const init = await run(m, ['init']);
    expect(init.code, init.stderr).toBe(0);
    const asked = server.requests.length;
    const again = await run(m, ['init', '--offline']);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).not.toMatch(/replace \/usr\/local\/bin|extract /);
    expect(server.requests.length).toBe(asked);
  });

  it('is refused under --offline before any change when a sha256 must be read from the server', async () => {
    const m = machine();
    // The images are the site's mirror's to give: only the sha256 is wanting.
    writeFileSync(m.config, readFileSync(m.config, 'utf8').replace('spec:\n', 'spec:\n  containerd:\n    registries:\n      _default:\n        mirrors: [{ url: "https://mirror.internal.example:5000" }]\n'));
    const asked = server.requests.length;
    const init = await runCli(['init', '-c', m.config, '--root', m.root, '--state-dir', m.state, '--offline'], { env: standinEnv() });
    expect(init.code).toBe(2);
    expect(init.stderr).toContain(`${server.url}/release/${VERSION}/bin/linux/${ARCH}/kubeadm.sha256`);
    expect(server.requests.length).toBe(asked);
    expect(existsSync(join(m.root, 'usr/local/bin'))).toBe(false);
  });
});
