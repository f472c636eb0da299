// Every step that can refuse a run before its first change (its preflight; the checks that show a
// "refuse" line belong to steps with one) is walked here through `init`, `plan` and
// `config validate --on-machine`: the run is refused with its documented
// exit code and message, and the root and the state directory (with an earlier run's state in it)
// are byte for byte as they were. A Linux step of the registry with a preflight and no case here
// fails the last test: a new refusal cannot be added without being walked.
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { ALL_PHASES } from '../../src/phases/registry.ts';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { snapshotTree } from '../support/tree.ts';
import { FIXTURE_BIN, NODE_BIN, TEST_PATH } from '../kubeadm/standin.ts';

const TOKEN = 'abcdef.0123456789abcdef';
const HASH = 'sha256:' + 'ab'.repeat(32);
const worker = { controlPlaneEndpoint: '10.0.0.10:6443', token: TOKEN, caCertHashes: [HASH] };
// Written by prepare before the step that refuses, if the refusal came too late.
const early = { files: [{ path: '/etc/written-by-prepare.conf', content: 'x\n' }], sysctls: { 'net.ipv4.ip_forward': '1' } };

interface Machine {
  dir: string;
  root: string;
  state: string;
}

interface Refusal {
  /** The registry's step id that refuses, or "endpoints" / "--offline" for the run's own checks. */
  by: string;
  what: string;
  spec(m: Machine): Record<string, unknown>;
  code: number;
  message: RegExp;
  flags?: string[];
  env?: Record<string, string>;
}

const write = (m: Machine, path: string, content: string) => {
  mkdirSync(join(m.root, path, '..'), { recursive: true });
  writeFileSync(join(m.root, path), content);
};

const refusals: Refusal[] = [
  {
    by: 'prepare/files',
    what: "a download's CA bundle that is not on the machine",
    spec: () => ({ ...early, files: [...early.files, { path: '/opt/tool', source: { url: 'https://files.example/tool', sha256: 'a'.repeat(64), caFile: '/etc/ssl/files-ca.pem' } }] }),
    code: 2,
    message: /spec\.files\[1\]\.source\.caFile: \/etc\/ssl\/files-ca\.pem does not exist/,
  },
  {
    by: 'prepare/files',
    what: "a download's CA bundle that is not PEM",
    spec: (m) => (write(m, '/etc/ssl/files-ca.pem', 'not a certificate\n'), { ...early, files: [...early.files, { path: '/opt/tool', source: { url: 'https://files.example/tool', sha256: 'a'.repeat(64), caFile: '/etc/ssl/files-ca.pem' } }] }),
    code: 2,
    message: /spec\.files\[1\]\.source\.caFile: \/etc\/ssl\/files-ca\.pem is not a PEM certificate/,
  },
  {
    by: 'prepare/files',
    what: 'a target whose directory is a symbolic link out of the root',
    spec: (m) => (symlinkSync(m.dir, join(m.root, 'opt')), { ...early, files: [...early.files, { path: '/opt/x.conf', content: 'x' }] }),
    code: 2,
    message: /spec\.files\[1\]\.path: path "\/opt\/x\.conf" resolves through a symbolic link/,
  },
  // A folder machineadm writes into, made a link out of the root: the step's check refuses it,
  // and so does the run before its first change (a step written earlier must not be).
  {
    by: 'prepare/sysctls/file',
    what: 'sysctl.d as a symbolic link out of the root',
    spec: (m) => (symlinkSync(m.dir, join(m.root, 'etc/sysctl.d')), { ...early, kernelModules: ['overlay'] }),
    code: 2,
    message: /spec\.sysctls: path "\/etc\/sysctl\.d\/90-machineadm\.conf" resolves through a symbolic link/,
  },
  {
    by: 'prepare/containerd/hosts',
    what: 'certs.d as a symbolic link out of the root',
    spec: (m) => (mkdirSync(join(m.root, 'etc/containerd')), symlinkSync(m.dir, join(m.root, 'etc/containerd/certs.d')), { ...early, containerd: { registries: { 'docker.io': { mirrors: [{ url: 'https://mirror.example:5000' }] } } } }),
    code: 2,
    message: /path "\/etc\/containerd\/certs\.d\/docker\.io\/hosts\.toml" resolves through a symbolic link/,
  },
  {
    by: 'prepare/containerd/proxy',
    what: "containerd's drop-in folder as a symbolic link out of the root",
    spec: (m) => (mkdirSync(join(m.root, 'etc/systemd/system'), { recursive: true }), symlinkSync(m.dir, join(m.root, 'etc/systemd/system/containerd.service.d')), { ...early, containerd: { proxy: { httpsProxy: 'http://proxy.example:3128' } } }),
    code: 2,
    message: /path "\/etc\/systemd\/system\/containerd\.service\.d\/[^"]+" resolves through a symbolic link/,
  },
  {
    by: 'report/sentinel',
    what: '/run/cluster-api as a symbolic link out of the root',
    spec: (m) => (mkdirSync(join(m.root, 'run')), symlinkSync(m.dir, join(m.root, 'run/cluster-api')), { ...early, kubernetes: { ...worker, version: 'v1.31.2' } }),
    code: 2,
    message: /path "\/run\/cluster-api\/bootstrap-success\.complete" resolves through a symbolic link/,
  },
  {
    by: 'the run',
    what: 'its own /run/machineadm as a symbolic link out of the root',
    spec: (m) => (mkdirSync(join(m.root, 'run')), symlinkSync(m.dir, join(m.root, 'run/machineadm')), early),
    code: 2,
    message: /path "\/run\/machineadm" resolves through a symbolic link to .*, outside the root/,
  },
  {
    by: 'prepare/files',
    what: 'a local source whose sha256 is not the one given',
    spec: (m) => (writeFileSync(join(m.dir, 'tool'), 'tool\n'), { ...early, files: [...early.files, { path: '/opt/tool', source: { url: `file://${join(m.dir, 'tool')}`, sha256: 'a'.repeat(64) } }] }),
    code: 3,
    message: /spec\.files\[1\]\.source\.sha256: .*SHA-256 is [0-9a-f]{64}, expected a{64}/,
  },
  {
    by: 'prepare/files',
    what: 'an owner the machine does not have',
    spec: () => ({ ...early, files: [...early.files, { path: '/etc/owned.conf', content: 'x\n', owner: 'nobody-here:root' }] }),
    code: 2,
    message: /spec\.files\[1\]\.owner: owner "nobody-here:root": user "nobody-here" does not exist on this machine/,
  },
  {
    by: 'prepare/users',
    what: 'a password hash file that does not exist',
    spec: () => ({ ...early, users: [{ name: 'ops', passwordHash: { valueFrom: { file: '/etc/machineadm/ops-hash' } } }] }),
    code: 2,
    message: /spec\.users\[0\]\.passwordHash: secret file \/etc\/machineadm\/ops-hash does not exist/,
  },
  {
    by: 'prepare/time-servers/file',
    what: 'a drop-in path that is a symbolic link',
    spec: (m) => (write(m, '/etc/systemd/timesyncd.conf', '[Time]\n'), mkdirSync(join(m.root, 'etc/systemd/timesyncd.conf.d')), symlinkSync('../timesyncd.conf', join(m.root, 'etc/systemd/timesyncd.conf.d/machineadm.conf')), { ...early, timeServers: { servers: ['10.0.0.1'] } }),
    code: 2,
    message: /spec\.timeServers\.servers: \/etc\/systemd\/timesyncd\.conf\.d\/machineadm\.conf is a symbolic link/,
  },
  {
    by: 'prepare/containerd/config',
    what: 'a config.toml that is a symbolic link',
    spec: (m) => (write(m, '/opt/config.toml', 'version = 2\n'), mkdirSync(join(m.root, 'etc/containerd'), { recursive: true }), symlinkSync('../../opt/config.toml', join(m.root, 'etc/containerd/config.toml')), { ...early, containerd: {} }),
    code: 2,
    message: /spec\.containerd: \/etc\/containerd\/config\.toml is a symbolic link/,
  },
  {
    by: 'prepare/containerd/proxy',
    what: 'a proxy drop-in path that is a symbolic link',
    spec: (m) => (write(m, '/opt/proxy.conf', '[Service]\n'), mkdirSync(join(m.root, 'etc/systemd/system/containerd.service.d'), { recursive: true }), symlinkSync('../../../../opt/proxy.conf', join(m.root, 'etc/systemd/system/containerd.service.d/machineadm-proxy.conf')), { ...early, containerd: { proxy: { httpsProxy: 'http://proxy.internal:3128' } } }),
    code: 2,
    message: /spec\.containerd\.proxy: \/etc\/systemd\/system\/containerd\.service\.d\/machineadm-proxy\.conf is a symbolic link/,
  },
  {
    by: 'prepare/kubernetes/install',
    what: 'another kubeadm where install would put its own',
    spec: (m) => (
      write(m, '/usr/local/bin/kubeadm', '#!/bin/sh\n'),
      { ...early, kubernetes: { ...worker, version: 'v1.31.2', install: { baseUrl: 'http://127.0.0.1:9/release', sha256: { kubeadm: 'a'.repeat(64), kubelet: 'b'.repeat(64), kubectl: 'c'.repeat(64) } } } }
    ),
    code: 2,
    message: /spec\.kubernetes\.install: \/usr\/local\/bin\/kubeadm is already there and is not kubeadm v1\.31\.2/,
  },
  {
    by: 'prepare/kubernetes/kubelet-unit',
    what: "a distribution's kubelet drop-in that systemd reads after 10-kubeadm.conf and that runs another kubelet",
    spec: (m) => (
      write(m, '/usr/lib/systemd/system/kubelet.service.d/kubeadm.conf', '[Service]\nExecStart=\nExecStart=/usr/bin/kubelet $KUBELET_EXTRA_ARGS\n'),
      { ...early, kubernetes: { ...worker, version: 'v1.31.2', install: { baseUrl: 'http://127.0.0.1:9/release', sha256: { kubeadm: 'a'.repeat(64), kubelet: 'b'.repeat(64), kubectl: 'c'.repeat(64) } } } }
    ),
    code: 2,
    message: /spec\.kubernetes\.install: \/usr\/lib\/systemd\/system\/kubelet\.service\.d\/kubeadm\.conf \(read after .*\) makes the kubelet's unit run \/usr\/bin\/kubelet/,
  },
  {
    by: 'prepare/containerd/images',
    what: 'an image archive on this machine that is not there',
    spec: (m) => ({ ...early, kubernetes: { ...worker, version: 'v1.31.2', install: { binaries: [], images: [{ url: `file://${m.dir}/missing.tar`, sha256: 'd'.repeat(64) }] } } }),
    code: 2,
    message: /spec\.kubernetes\.install\.images\[0\]\.url: .*missing\.tar does not exist/,
  },
  {
    by: 'provision/kubeadm/join',
    what: 'secrets that cannot be read, all of them at once',
    spec: (m) => (write(m, '/etc/machineadm/hash', 'not a hash\n'), { ...early, kubernetes: { ...worker, token: { valueFrom: { file: '/etc/machineadm/token' } }, caCertHashes: [{ valueFrom: { file: '/etc/machineadm/hash' } }] } }),
    code: 2,
    message: /invalid configuration \(2 problems\):\n.*spec\.kubernetes\.token: secret file \/etc\/machineadm\/token does not exist[\s\S]*spec\.kubernetes\.caCertHashes\[0\]: the value read is not a CA hash/,
  },
  {
    by: 'provision/kubeadm/join',
    what: 'a machine without kubeadm, which nothing of the run installs',
    spec: () => ({ ...early, kubernetes: worker }),
    env: { MACHINEADM_KUBEADM_ROOTFS: '1', PATH: '/usr/bin:/bin' },
    code: 2,
    message: /refused before any change \(1 problem\):\n {2}spec\.kubernetes: kubeadm is not installed \(not found on PATH\)/,
  },
  {
    by: 'provision/kubeadm/join',
    what: 'a machine without containerd, which nothing of the run installs',
    spec: () => ({ ...early, kubernetes: worker }),
    // kubeadm (the stand-in) and node are there; containerd is not.
    env: { MACHINEADM_KUBEADM_ROOTFS: '1', PATH: `${FIXTURE_BIN}:${NODE_BIN}` },
    code: 2,
    message: /refused before any change \(1 problem\):\n {2}spec\.kubernetes: containerd is not installed \(not found on PATH\): kubeadm needs a container runtime/,
  },
  {
    by: 'provision/kubeadm/join',
    what: "kubeadm's files of a join it has no record of",
    spec: (m) => (write(m, '/etc/kubernetes/bootstrap-kubelet.conf', 'x\n'), { ...early, kubernetes: worker }),
    env: { MACHINEADM_KUBEADM_ROOTFS: '1' },
    code: 2,
    message: /refused before any change \(1 problem\):\n {2}spec\.kubernetes\.bootstrap: kubeadm join: \/etc\/kubernetes\/bootstrap-kubelet\.conf exists/,
  },
  {
    by: 'provision/kubeadm/init',
    what: "kubeadm's manifests of a control plane it has no record of",
    spec: (m) => (write(m, '/etc/kubernetes/manifests/kube-apiserver.yaml', 'x\n'), { ...early, kubernetes: { role: 'control-plane', bootstrap: 'init' } }),
    env: { MACHINEADM_KUBEADM_ROOTFS: '1' },
    code: 2,
    message: /kubeadm init: \/etc\/kubernetes\/manifests\/kube-apiserver\.yaml exists but machineadm has no record/,
  },
  {
    by: 'provision/kubeadm/join',
    what: 'a control-plane join with neither a certificate key nor the cluster certificates',
    spec: (m) => (write(m, '/etc/kubernetes/pki/ca.crt', 'x\n'), { ...early, kubernetes: { ...worker, role: 'control-plane' } }),
    code: 2,
    message: /spec\.kubernetes\.certificateKey: a control-plane join needs the certificate key, or the cluster's certificates as files \(missing: \/etc\/kubernetes\/pki\/ca\.key, \/etc\/kubernetes\/pki\/sa\.key/,
  },
  {
    by: 'provision/kubeadm/join',
    what: "a patch file with the name of machineadm's own kubelet patch",
    spec: (m) => (write(m, '/etc/kubeadm/patches/kubeletconfiguration+merge.yaml', 'maxPods: 10\n'), { ...early, kubernetes: { ...worker, patchesDirectory: '/etc/kubeadm/patches' } }),
    code: 2,
    message: /spec\.kubernetes\.patchesDirectory: \/etc\/kubeadm\/patches\/kubeletconfiguration\+merge\.yaml has the name of machineadm's own kubelet patch/,
  },
  {
    by: 'provision/domain/join',
    what: 'a join password file that does not exist',
    spec: () => ({ ...early, domainJoin: { domain: 'corp.example', credentials: { username: 'joiner', password: { valueFrom: { file: '/etc/machineadm/join-password' } } } } }),
    code: 2,
    message: /spec\.domainJoin\.credentials\.password: secret file \/etc\/machineadm\/join-password does not exist/,
  },
  {
    by: 'provision/domain/join',
    what: 'DNS servers, which the Linux join does not set',
    spec: () => ({ ...early, domainJoin: { domain: 'corp.example', dnsServers: ['10.0.0.2'], credentials: { username: 'joiner', password: 'pw' } } }),
    code: 2,
    message: /spec\.domainJoin\.dnsServers/,
  },
  {
    by: 'prepare/storage/partitions',
    what: 'a disk that does not exist (with --devices)',
    spec: () => ({ ...early, storage: { disks: [{ device: '/dev/machineadm-no-such-disk' }] } }),
    flags: ['--devices'],
    code: 2,
    message: /spec\.storage\.disks\[0\]\.device: \/dev\/machineadm-no-such-disk does not exist/,
  },
  {
    by: 'prepare/storage/filesystems',
    what: 'a filesystem on something that is not a block device (with --devices)',
    spec: () => ({ ...early, storage: { filesystems: [{ device: '/dev/null', format: 'ext4' }] } }),
    flags: ['--devices'],
    code: 2,
    message: /spec\.storage\.filesystems\[0\]\.device: \/dev\/null is a character device, not a block device/,
  },
  {
    by: 'prepare/storage/mounts',
    what: 'a mount of a device that does not exist (with --devices)',
    spec: () => ({ ...early, storage: { mounts: [{ device: '/dev/machineadm-no-such-disk1', path: '/var/lib/etcd' }] } }),
    flags: ['--devices'],
    code: 2,
    message: /spec\.storage\.mounts\[0\]\.device: \/dev\/machineadm-no-such-disk1 does not exist/,
  },
  {
    by: 'prepare/storage/fstab',
    what: 'a mount path that /etc/fstab mounts already, outside its block',
    spec: (m) => (write(m, '/etc/fstab', '# the image\n/dev/sdz1 /var/lib/etcd ext4 defaults 0 2\n'), { ...early, storage: { mounts: [{ device: 'LABEL=etcd', path: '/var/lib/etcd' }] } }),
    code: 2,
    message: /spec\.storage\.mounts\[0\]\.path: \/etc\/fstab line 2 mounts \/var\/lib\/etcd already \("\/dev\/sdz1 \/var\/lib\/etcd ext4 defaults 0 2"\), outside machineadm's block/,
  },
  {
    by: 'endpoints',
    what: "an endpoint's bearer token file that is a directory",
    spec: (m) => (mkdirSync(join(m.root, 'etc/machineadm/collector-token'), { recursive: true }), { ...early, report: { endpoints: [{ url: 'https://collector.example/events', bearerToken: { valueFrom: { file: '/etc/machineadm/collector-token' } } }] } }),
    code: 2,
    message: /spec\.report\.endpoints\[0\]\.bearerToken: secret file \/etc\/machineadm\/collector-token is not a regular file/,
  },
  {
    by: '--offline',
    what: 'a download in an offline run',
    spec: () => ({ ...early, files: [...early.files, { path: '/opt/tool', source: { url: 'https://files.example/tool', sha256: 'a'.repeat(64) } }] }),
    flags: ['--offline'],
    code: 2,
    message: /--offline: this run would use the network, so nothing was changed:\n {2}prepare\/files: download https:\/\/files\.example\/tool for spec\.files\[1\]/,
  },
];

// Steps whose preflight looks at the running kernel only, which a scratch --root leaves alone: each
// is walked on the live machine by the test named here, which changes nothing.
const LIVE_ONLY: Record<string, string> = {
  'prepare/kernel-modules/load': 'test/linux/live-steps.test.ts: "refuses a module that does not exist before the first change of the run, naming the field"',
};

function machine(): Machine {
  const dir = scratchDir('machineadm-refusal-');
  const m = { dir, root: join(dir, 'root'), state: join(dir, 'state') };
  mkdirSync(join(m.root, 'etc'), { recursive: true });
  writeFileSync(join(m.root, 'etc/hostname'), 'node-1\n');
  // An earlier run's records: a refused run must not add to them.
  mkdirSync(m.state);
  writeFileSync(join(m.state, 'state.json'), JSON.stringify({ version: 1, steps: {}, runs: [{ runId: 'earlier', command: 'init', startedAt: '2026-12-01T00:00:00.000Z', finishedAt: '2026-12-01T00:00:01.000Z', result: 'success' }] }) + '\n');
  return m;
}

describe('a refusal before the first change', () => {
  it.each(refusals.map((r) => [r.by, r.what, r] as const))('%s refuses %s: init, plan and config validate --on-machine exit with its code, nothing changed', async (_by, _what, r) => {
    const m = machine();
    const config = join(m.dir, 'machine.yaml');
    writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: r.spec(m) }));
    const before = { root: snapshotTree(m.root), state: snapshotTree(m.state) };
    const env = { ...process.env, PATH: TEST_PATH, KUBEADM_STANDIN_VERSION: 'v1.31.2', ...r.env };
    for (const command of ['init', 'plan', 'config validate --on-machine']) {
      const out = await runCli([...command.split(' '), '-c', config, '--root', m.root, '--state-dir', m.state, ...(r.flags ?? [])], { env });
      expect(out.code, `${command}: ${out.stderr}`).toBe(r.code);
      expect(out.stderr, command).toMatch(r.message);
      expect(snapshotTree(m.root), command).toEqual(before.root);
      expect(snapshotTree(m.state), command).toEqual(before.state);
    }
    expect(readFileSync(join(m.state, 'state.json'), 'utf8')).toContain('"earlier"');
  });

  it('config validate --on-machine says a machine that would accept the run so, exit 0, and takes --state-dir only with it', async () => {
    const m = machine();
    const config = join(m.dir, 'machine.yaml');
    writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: early }));
    const before = snapshotTree(m.root);
    const ok = await runCli(['config', 'validate', '--on-machine', '-c', config, '--root', m.root, '--state-dir', m.state]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/configuration is valid, and this machine would accept it: no step refuses, [1-9]\d* would change it/);
    expect(snapshotTree(m.root)).toEqual(before);
    const misuse = await runCli(['config', 'validate', '-c', config, '--root', m.root, '--state-dir', m.state]);
    expect(misuse.code).toBe(2);
    expect(misuse.stderr).toContain('--state-dir, --set and --devices go with --on-machine');
  });

  it('is walked for every step of the registry that has a preflight, on Linux', () => {
    // The steps whose checks show a "refuse" line (kubeadm, the domain join) have a preflight that
    // refuses the same: a check's refusal cannot wait for the step. Windows-only steps refuse
    // through the same pass on a Windows machine.
    const refusing = ALL_PHASES.flatMap((phase) => phase.steps.filter((step) => step.preflight && (!step.platforms || step.platforms.includes('linux'))).map((step) => `${phase.name}/${step.id}`));
    expect(refusing.length).toBeGreaterThan(0);
    expect(refusing.filter((id) => !refusals.some((r) => r.by === id) && !(id in LIVE_ONLY))).toEqual([]);
  });
});
