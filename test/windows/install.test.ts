// spec.kubernetes.install on the simulated Windows machine: kubelet.exe, kubeadm.exe and kubectl.exe
// from the release's Windows layout, crictl.exe and the Windows CNI plugins from their archives
// (made and unpacked by the real tar, as Windows' own tar.exe does), into the folders the services
// machineadm registers read: C:\k and C:\opt\cni\bin. All or none; a rerun downloads nothing.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHost, RootedFileSystem, type Facts, type Host, type ProcessRunner } from '../../src/host/index.ts';
import { runPhases, type RunnerInput } from '../../src/engine/runner.ts';
import { StateStore } from '../../src/engine/state.ts';
import { EventBus } from '../../src/engine/events.ts';
import { SecretScrubber } from '../../src/config/secrets.ts';
import { kubernetesInstallStep } from '../../src/kubeadm/steps/install.ts';
import { exitCodeOf } from '../../src/errors.ts';
import { configFrom } from '../report/harness.ts';
import { scratchDir } from '../support/tmp.ts';
import { startHttp, type RunningServer } from '../config/helpers/servers.ts';
import { realPath, SimulatedWindows, windowsFiles } from './simulated-windows.ts';

const VERSION = 'v1.34.2';
const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const EXES: Record<string, Buffer> = { kubeadm: Buffer.from('MZ kubeadm\n'), kubelet: Buffer.from('MZ kubelet\n'), kubectl: Buffer.from('MZ kubectl\n') };
const served = new Map<string, Buffer>();
let server: RunningServer;

function archive(dir: string, name: string, members: Record<string, string>): Buffer {
  const from = join(dir, `${name}-content`);
  mkdirSync(from, { recursive: true });
  for (const [member, text] of Object.entries(members)) writeFileSync(join(from, member), text);
  execFileSync('tar', ['-czf', join(dir, name), '-C', from, ...Object.keys(members)]);
  return readFileSync(join(dir, name));
}

beforeAll(async () => {
  const dir = scratchDir();
  for (const [name, bytes] of Object.entries(EXES)) {
    served.set(`/release/${VERSION}/bin/windows/amd64/${name}.exe`, bytes);
    served.set(`/release/${VERSION}/bin/windows/amd64/${name}.exe.sha256`, Buffer.from(sha(bytes)));
  }
  served.set('/crictl-windows-amd64.tar.gz', archive(dir, 'crictl.tgz', { 'crictl.exe': 'MZ crictl\n' }));
  served.set('/cni-windows-amd64.tgz', archive(dir, 'cni.tgz', { 'nat.exe': 'MZ nat\n', 'sdnbridge.exe': 'MZ sdnbridge\n' }));
  for (const name of ['/crictl-windows-amd64.tar.gz', '/cni-windows-amd64.tgz']) served.set(`${name}.sha256`, Buffer.from(sha(served.get(name)!)));
  server = await startHttp((req, res) => {
    const body = served.get(req.url ?? '');
    res.writeHead(body ? 200 : 404);
    res.end(body ?? '');
  });
});
afterAll(() => server.close());

function machine() {
  const root = scratchDir('machineadm-windows-install-');
  const sim = new SimulatedWindows('20348');
  const fs = windowsFiles(root);
  // Windows' tar.exe, here the real tar on the paths the simulated machine maps its drives to.
  const proc = {
    which: async () => undefined,
    run: async (argv: string[]) => {
      if (argv[0] !== 'tar') throw new Error(`unexpected command ${argv.join(' ')}`);
      execFileSync('tar', argv.slice(1));
      return { argv, exitCode: 0, stdout: '', stderr: '', durationMs: 1 };
    },
  } as unknown as ProcessRunner;
  return { root, sim, fs, proc, stateFs: new RootedFileSystem(join(root, 'state')) };
}

async function install(m: ReturnType<typeof machine>, extra: Record<string, unknown> = {}) {
  const facts: Facts = { os: 'windows', arch: 'x64', hostname: 'WIN-NODE1', privileged: true, liveRoot: true, windowsBuild: '20348', bootId: await m.sim.bootId() };
  const host: Host = { ...createHost({ root: m.root, facts, env: {}, windows: m.sim }), fs: m.fs, proc: m.proc };
  const config = configFrom({
    kubernetes: {
      bootstrap: 'join',
      role: 'worker',
      version: VERSION,
      controlPlaneEndpoint: 'cp.internal:6443',
      token: 'abcdef.0123456789abcdef',
      caCertHashes: [`sha256:${'0'.repeat(64)}`],
      install: { baseUrl: `${server.url}/release`, crictl: { version: 'v1.34.0', url: `${server.url}/crictl-{os}-{arch}.tar.gz` }, cniPlugins: { version: 'v1.8.0', url: `${server.url}/cni-{os}-{arch}.tgz` }, ...extra },
    },
  });
  const input: RunnerInput = { command: 'prepare', phases: [{ name: 'prepare', summary: 'prepare', steps: [kubernetesInstallStep] }], selection: {}, config, facts, host, events: new EventBus(), state: new StateStore(m.stateFs), force: false, secrets: new SecretScrubber() };
  return runPhases(input);
}

const downloads = () => server.requests.filter((r) => !r.url.endsWith('.sha256')).length;

describe('spec.kubernetes.install on Windows', () => {
  it('installs the .exe binaries into C:\\k, crictl.exe beside them and the CNI plugins into C:\\opt\\cni\\bin; a rerun downloads nothing', async () => {
    const m = machine();
    const outcome = await install(m);
    expect(outcome.error).toBeUndefined();
    for (const [name, bytes] of Object.entries(EXES)) expect(readFileSync(realPath(m.root, `C:\\k\\${name}.exe`))).toEqual(bytes);
    expect(readFileSync(realPath(m.root, 'C:\\k\\crictl.exe'), 'utf8')).toBe('MZ crictl\n');
    expect(readFileSync(realPath(m.root, 'C:\\opt\\cni\\bin\\sdnbridge.exe'), 'utf8')).toBe('MZ sdnbridge\n');
    expect(existsSync(realPath(m.root, 'C:\\ProgramData\\machineadm\\install'))).toBe(false);
    const fetched = downloads();
    const again = await install(m);
    expect(again.error).toBeUndefined();
    expect(downloads()).toBe(fetched);
  });

  it('installs nothing when one piece does not match its sha256 (exit 3)', async () => {
    const m = machine();
    const outcome = await install(m, { sha256: { kubelet: 'f'.repeat(64) } });
    expect(exitCodeOf(outcome.error)).toBe(3);
    for (const name of ['kubeadm', 'kubelet', 'kubectl', 'crictl']) expect(existsSync(realPath(m.root, `C:\\k\\${name}.exe`))).toBe(false);
    expect(existsSync(realPath(m.root, 'C:\\opt\\cni\\bin\\nat.exe'))).toBe(false);
  });
});
