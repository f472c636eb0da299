// A real containerd runs with the configuration machineadm writes: the CRI plugin must load with
// status ok, and an image pushed to a local registry must be pullable THROUGH THE CRI under a
// registry name that exists only as a certs.d hosts.toml mirror, so the pull works only if the
// mirror configuration is right.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFileSync, existsSync, mkdirSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';
import { Services, exec } from './services.ts';
import { runCli } from '../support/cli.ts';
import { parseFacts } from './facts.ts';
import { absentHostPaths } from '../support/host-paths.ts';

const skip = missingRequirement({ root: true, commands: ['containerd', 'ctr', 'runc', 'docker-registry', 'skopeo', 'umoci', 'openssl'] });

type Client = grpc.Client & Record<string, (req: unknown, opts: { deadline: Date }, cb: (err: grpc.ServiceError | null, res: any) => void) => void>;

function criClients(socket: string): { images: Client; runtime: Client } {
  const definition = loadSync(join(import.meta.dirname, 'fixtures', 'cri-image.proto'), { keepCase: false, longs: String, defaults: true });
  const pkg = grpc.loadPackageDefinition(definition) as any;
  const address = `unix://${socket}`;
  return {
    images: new pkg.runtime.v1.ImageService(address, grpc.credentials.createInsecure()),
    runtime: new pkg.runtime.v1.RuntimeService(address, grpc.credentials.createInsecure()),
  };
}

function call<T>(client: Client, method: string, request: unknown, seconds = 60): Promise<T> {
  return new Promise((resolve, reject) => client[method]!(request, { deadline: new Date(Date.now() + seconds * 1000) }, (err, res) => (err ? reject(err) : resolve(res as T))));
}

describe.skipIf(skip)('a real containerd with machineadm configuration', () => {
  const dir = skip ? '' : scratchDir('machineadm-cri-');
  const services = new Services(dir);
  let socket = '';
  let log = '';
  let clients: { images: Client; runtime: Client } | undefined;
  const repository = 'machineadm/hello';
  // Before the registry, skopeo and containerd start.
  const absentBefore = absentHostPaths();
  const tag = '1.0';
  let tlsRegistry = '';
  let ca = '';

  beforeAll(async () => {
    const registry = await services.startRegistry();
    await services.pushImage(registry, repository, tag);
    const machine = join(dir, 'machine');
    // A registry over TLS with a CA of its own, given only as the entry's caFile (a hosts.toml
    // without mirrors). The path is the same under the root and on this machine, where the daemon reads it.
    ca = join(dir, 'registry-ca.pem');
    tlsRegistry = await services.startRegistry({ ca });
    await services.pushImage(tlsRegistry, repository, tag);
    mkdirSync(join(machine, dir), { recursive: true });
    copyFileSync(ca, join(machine, ca));
    const version = parseFacts((await exec('containerd', ['--version'])).stdout);
    const certs = join(machine, 'etc/containerd/certs.d');
    // Every folder the daemon uses is under the temporary directory: the hosts directory, its opt
    // directory, and CNI's (containerd makes a missing CNI config folder at start).
    const [images, runtime] = version.startsWith('1.') ? ['io.containerd.grpc.v1.cri', 'io.containerd.grpc.v1.cri'] : ['io.containerd.cri.v1.images', 'io.containerd.cri.v1.runtime'];
    const extra = [
      `[plugins."io.containerd.internal.v1.opt"]\n  path = "${dir}/opt"`,
      `[plugins."${images}".registry]\n  config_path = "${certs}"`,
      `[plugins."${runtime}".cni]\n  bin_dir = "${dir}/cni/bin"\n  conf_dir = "${dir}/cni/net.d"`,
    ].join('\n');
    const config = join(dir, 'machine.yaml');
    writeFileSync(
      config,
      [
        'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1',
        'kind: MachineConfig',
        'spec:',
        '  containerd:',
        '    sandboxImage: registry.k8s.io/pause:3.10',
        '    cgroupDriver: cgroupfs',
        '    registries:',
        '      mirror-only.example:',
        '        mirrors:',
        `          - url: http://${registry}`,
        `      ${JSON.stringify(tlsRegistry)}:`,
        `        caFile: ${ca}`,
        '    extraConfig: |',
        ...extra.split('\n').map((l) => `      ${l}`),
      ].join('\n'),
    );
    const prepared = await runCli(['prepare', '-c', config, '--root', machine, '--state-dir', join(dir, 'state'), '--only', 'prepare/containerd']);
    expect(prepared.stderr).toBe('');
    expect(prepared.code).toBe(0);
    ({ socket, log } = await services.startContainerd(join(machine, 'etc/containerd/config.toml')));
    clients = criClients(socket);
  }, 120_000);

  afterAll(async () => {
    clients?.images.close();
    clients?.runtime.close();
    await services.stop();
  });

  it('loads the CRI plugin with status ok', async () => {
    const { stdout } = await exec('ctr', ['--address', socket, 'plugins', 'ls']);
    const cri = stdout.split('\n').find((l) => /^io\.containerd\.grpc\.v1\s+cri\s/.test(l));
    expect(cri, `plugins:\n${stdout}\nlog:\n${readFileSync(log, 'utf8').slice(-2000)}`).toMatch(/\sok\s*$/);
    const version = await call<{ runtimeName: string; runtimeApiVersion: string }>(clients!.runtime, 'Version', {});
    expect(version.runtimeName).toBe('containerd');
    expect(version.runtimeApiVersion).toBe('v1');
  });

  it('runs with its CNI folders under the temporary directory, not the host\'s', async () => {
    const status = await call<{ info: Record<string, string> }>(clients!.runtime, 'Status', { verbose: true });
    const cni = (JSON.parse(status.info.config ?? '{}') as { cni?: { binDir?: string; confDir?: string } }).cni;
    expect(cni).toEqual(expect.objectContaining({ binDir: `${dir}/cni/bin`, confDir: `${dir}/cni/net.d` }));
  });

  it('pulls an image through the CRI from a registry that exists only as a hosts.toml mirror', async () => {
    const image = `mirror-only.example/${repository}:${tag}`;
    const pulled = await call<{ imageRef: string }>(clients!.images, 'PullImage', { image: { image } });
    expect(pulled.imageRef).toMatch(/^sha256:[0-9a-f]{64}$/);
    const listed = await call<{ images: { id: string; repoTags: string[] }[] }>(clients!.images, 'ListImages', {});
    expect(listed.images.find((i) => i.id === pulled.imageRef)?.repoTags).toContain(image);
  });

  it('pulls an image through the CRI from a registry whose hosts.toml gives only its CA, no mirrors', async () => {
    const image = `${tlsRegistry}/${repository}:${tag}`;
    const pulled = await call<{ imageRef: string }>(clients!.images, 'PullImage', { image: { image } }, 45).catch((e: grpc.ServiceError) => e.message);
    expect(pulled, `log:\n${readFileSync(log, 'utf8').split('\n').filter((l) => /hosts\.toml|x509/.test(l)).slice(-5).join('\n')}`).toEqual({ imageRef: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
  });

  it('does not find the same image under a registry name without a mirror (the mirror is what made the pull work)', async () => {
    const error = await call(clients!.images, 'PullImage', { image: { image: `not-mirrored.example/${repository}:${tag}` } }, 45).then(
      () => undefined,
      (e: grpc.ServiceError) => e,
    );
    expect(error?.message).toMatch(/not-mirrored\.example/);
  });

  it('creates none of the host folders containerd, CNI and skopeo use by default', () => {
    expect(absentBefore.filter((p) => existsSync(p))).toEqual([]);
  });
});
