// spec.kubernetes.install.images against a real containerd: three tiny images built with umoci and
// pushed to a local docker-registry, mirrored from it with the real skopeo into an oci-archive
// (served over http on 127.0.0.1) and a docker-archive (given as a file:/// URL), as an operator
// prepares an air-gapped node. plan shows them, prepare imports them into k8s.io, a rerun does
// nothing, a wrong sha256 exits 3 with nothing imported, reset removes only what machineadm
// imported (an image the test imported itself stays). The pure readers are checked on archives
// the real tar writes.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { dump } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';
import { runCli } from '../support/cli.ts';
import { absentHostPaths } from '../support/host-paths.ts';
import { startHttp, type RunningServer } from '../config/helpers/servers.ts';
import { Services, exec } from './services.ts';
import { configsByTarget, imageRefsOf, normalizeImageRef, parseImageList, parseImageTable, readTarMembers, NAMING_MEMBERS } from '../../src/containerd/image-archives.ts';
import { CONTAINERD_ADDRESS_ENV } from '../../src/containerd/steps/images.ts';
import { REPO } from '../kubeadm/standin.ts';

const skip = missingRequirement({ root: true, commands: ['containerd', 'ctr', 'runc', 'docker-registry', 'skopeo', 'umoci'] });

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
const STEP = 'prepare/containerd/images';
const SERVED = 'example.test/machineadm/served:1.0';
const LOCAL = 'example.test/machineadm/local:1.0';
const OWN = 'example.test/machineadm/own:1.0';
const STAGE = '/var/tmp/machineadm-images';

// skopeo as root keeps a blob cache in /var/lib/containers on the host and has no flag to move it:
// it runs with a private, empty /var/lib (as in services.ts).
function skopeo(...args: string[]) {
  return exec('unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-c', 'mount -n -t tmpfs tmpfs /var/lib && exec "$@"', 'sh', 'skopeo', ...args], { timeout: 60_000 });
}

/** One image per tag in one OCI layout, each with a file of its own (so each has its own config digest). */
async function buildImages(dir: string, tags: string[]): Promise<string> {
  const layout = join(dir, 'oci');
  await exec('umoci', ['init', '--layout', layout]);
  for (const tag of tags) {
    const bundle = join(dir, `bundle-${tag}`);
    await exec('umoci', ['new', '--image', `${layout}:${tag}`]);
    await exec('umoci', ['unpack', '--image', `${layout}:${tag}`, bundle]);
    writeFileSync(join(bundle, 'rootfs', `${tag}.txt`), `${tag}, prepared by machineadm\n`);
    await exec('umoci', ['repack', '--image', `${layout}:${tag}`, bundle]);
  }
  return layout;
}

describe.skipIf(skip)('spec.kubernetes.install.images with a real containerd', () => {
  const dir = skip ? '' : scratchDir('machineadm-images-');
  const services = new Services(dir);
  const absentBefore = [...absentHostPaths(), ...(existsSync(STAGE) ? [] : [STAGE])];
  let server: RunningServer | undefined;
  let socket = '';
  const archives = { served: '', local: '', own: '' };
  let servedUrl = '';
  let localUrl = '';
  let ownBefore: string[] = [];

  const ctr = async (...args: string[]) => (await exec('ctr', ['--address', socket, '-n', 'k8s.io', ...args])).stdout;
  const listed = async () => parseImageList(await ctr('images', 'ls', '-q')).sort();
  /** The CRI gives an image its id reference (sha256:<config>) when it sees it: waits for as many as there are images. */
  const criHasSeen = async (names: string[]) => {
    for (let i = 0; i < 100; i++) {
      const table = parseImageTable(await ctr('images', 'ls'));
      const targets = new Set(table.filter((r) => names.includes(r.ref)).map((r) => r.digest));
      if (targets.size === names.length && [...targets].every((t) => table.some((r) => r.ref.startsWith('sha256:') && r.digest === t))) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`the CRI never gave ${names.join(', ')} an image id:\n${await ctr('images', 'ls')}`);
  };

  function machine(name: string, images: Array<{ url: string; sha256: string }>) {
    const m = { root: join(dir, name, 'root'), state: join(dir, name, 'state'), config: join(dir, name, 'machine.yaml') };
    mkdirSync(join(m.root, 'etc'), { recursive: true });
    const pinned = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
    const spec = {
      kubernetes: {
        version: 'v1.31.2',
        controlPlaneEndpoint: '10.0.0.10:6443',
        token: 'abcdef.0123456789abcdef',
        caCertHashes: [`sha256:${'ab'.repeat(32)}`],
        // Pinned: a plan then reads no NAME.sha256 from the (absent) release server.
        install: { baseUrl: 'http://127.0.0.1:9/release', sha256: { kubeadm: pinned, kubelet: pinned, kubectl: pinned }, images },
      },
      report: { clusterAPISentinel: false },
    };
    writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec }, { lineWidth: -1 }));
    return m;
  }
  const run = (m: ReturnType<typeof machine>, args: string[]) =>
    runCli([...args, '-c', m.config, '--root', m.root, '--state-dir', m.state], { env: { ...process.env, [CONTAINERD_ADDRESS_ENV]: socket } });

  let good: ReturnType<typeof machine>;

  beforeAll(async () => {
    const registry = await services.startRegistry();
    const layout = await buildImages(dir, ['served', 'local', 'own']);
    // Through the registry, as images are mirrored for an air-gapped site.
    for (const tag of ['served', 'local', 'own']) await skopeo('copy', '--quiet', '--dest-tls-verify=false', `oci:${layout}:${tag}`, `docker://${registry}/machineadm/${tag}:1.0`);
    archives.served = join(dir, 'served.oci.tar');
    archives.local = join(dir, 'local.docker.tar');
    archives.own = join(dir, 'own.oci.tar');
    await skopeo('copy', '--quiet', '--src-tls-verify=false', `docker://${registry}/machineadm/served:1.0`, `oci-archive:${archives.served}:${SERVED}`);
    await skopeo('copy', '--quiet', '--src-tls-verify=false', `docker://${registry}/machineadm/local:1.0`, `docker-archive:${archives.local}:${LOCAL}`);
    await skopeo('copy', '--quiet', '--src-tls-verify=false', `docker://${registry}/machineadm/own:1.0`, `oci-archive:${archives.own}:${OWN}`);

    const config = join(dir, 'containerd.toml');
    writeFileSync(config, [`version = 2`, `[plugins."io.containerd.internal.v1.opt"]`, `  path = "${dir}/opt"`, `[plugins."io.containerd.grpc.v1.cri".cni]`, `  bin_dir = "${dir}/cni/bin"`, `  conf_dir = "${dir}/cni/net.d"`, ''].join('\n'));
    ({ socket } = await services.startContainerd(config));

    const served = readFileSync(archives.served);
    server = await startHttp((req, res) => {
      const found = req.url === '/served.oci.tar';
      res.writeHead(found ? 200 : 404, { 'content-type': 'application/octet-stream' });
      res.end(found ? served : 'not found');
    });
    servedUrl = `${server.url}/served.oci.tar`;
    localUrl = pathToFileURL(archives.local).href;
    good = machine('good', [
      { url: servedUrl, sha256: sha256(archives.served) },
      { url: localUrl, sha256: sha256(archives.local) },
    ]);

    // The test's own image, there before machineadm runs: reset must leave it.
    await ctr('images', 'import', archives.own);
    await criHasSeen([OWN]);
    ownBefore = await listed();
  }, 180_000);

  afterAll(async () => {
    await server?.close();
    await services.stop();
  });

  it('plan lists each archive to import, with the images the file:/// one names', async () => {
    const plan = await run(good, ['plan', '--only', STEP]);
    expect(plan.code, plan.stdout + plan.stderr).toBe(0);
    expect(plan.stdout).toContain(`import ${servedUrl} (into containerd (k8s.io): the images it names, known once it is downloaded)`);
    // As machineadm shows a file: URL (redaction.ts displayUrl).
    expect(plan.stdout).toContain(`import file://${archives.local} (into containerd (k8s.io): ${LOCAL})`);
    expect(server!.requests).toHaveLength(0);
    expect(await listed()).toEqual(ownBefore);
  });

  it('plan reads a path relative to the configuration file as the archive beside it', async () => {
    const m = machine('relative', [{ url: 'images/local.docker.tar', sha256: sha256(archives.local) }]);
    const beside = join(m.config, '..', 'images', 'local.docker.tar');
    mkdirSync(join(beside, '..'));
    writeFileSync(beside, readFileSync(archives.local));
    const plan = await run(m, ['plan', '--only', STEP]);
    expect(plan.code, plan.stdout + plan.stderr).toBe(0);
    expect(plan.stdout).toContain(`import file://${beside} (into containerd (k8s.io): ${LOCAL})`);
  });

  it('refuses --offline before any change while the served archive is to be downloaded', async () => {
    const offline = await run(good, ['prepare', '--only', STEP, '--offline']);
    expect(offline.code, offline.stdout + offline.stderr).toBe(2);
    expect(offline.stderr).toContain(`${STEP}: download ${servedUrl} for spec.kubernetes.install.images[0]`);
    expect(server!.requests).toHaveLength(0);
    expect(await listed()).toEqual(ownBefore);
  });

  it.each([
    ['the served archive', 0],
    ['the file:/// archive', 1],
  ])('a wrong sha256 for %s exits 3 and imports nothing', async (_what, wrong) => {
    const served = { url: servedUrl, sha256: wrong === 0 ? 'f'.repeat(64) : sha256(archives.served) };
    const local = { url: localUrl, sha256: wrong === 1 ? 'f'.repeat(64) : sha256(archives.local) };
    // The wrong one last: the good one before it is checked (and staged) first, and still not imported.
    const m = machine(`wrong-${wrong}`, wrong === 0 ? [local, served] : [served, local]);
    const result = await run(m, ['prepare', '--only', STEP]);
    expect(result.code, result.stdout + result.stderr).toBe(3);
    expect(result.stderr).toContain(`SHA-256 is ${sha256(wrong === 0 ? archives.served : archives.local)}, expected ${'f'.repeat(64)}`);
    expect(await listed()).toEqual(ownBefore);
    expect(existsSync(join(m.root, STAGE))).toBe(false);
  });

  it("prepare imports both archives into containerd's k8s.io namespace under the names they hold", async () => {
    const prepared = await run(good, ['prepare', '--only', STEP]);
    expect(prepared.code, prepared.stdout + prepared.stderr).toBe(0);
    const now = await listed();
    expect(now).toEqual(expect.arrayContaining([...ownBefore, SERVED, LOCAL]));
    // The CRI (what the kubelet asks) sees them: it gives each its image id.
    await criHasSeen([SERVED, LOCAL]);
    expect(existsSync(join(good.root, STAGE))).toBe(false);
    const state = JSON.parse(readFileSync(join(good.state, 'state.json'), 'utf8')) as { steps: Record<string, { data?: { imported?: string[] } }> };
    expect(state.steps[STEP]?.data?.imported?.sort()).toEqual([LOCAL, SERVED]);
  });

  it('a rerun imports nothing and downloads nothing', async () => {
    const requests = server!.requests.length;
    const imagesBefore = await ctr('images', 'ls');
    const again = await run(good, ['prepare', '--only', STEP]);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(server!.requests.length).toBe(requests);
    expect(await ctr('images', 'ls')).toBe(imagesBefore);
    const plan = await run(good, ['plan', '--only', STEP]);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).not.toMatch(/^\s+import /m);
    expect(plan.stdout).toContain(`= ${STEP}: `);
    expect(server!.requests.length).toBe(requests);
  });

  it("reset removes only the images machineadm imported; the test's own image stays", async () => {
    const reset = await run(good, ['reset']);
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(await listed()).toEqual(ownBefore);
    const again = await run(good, ['reset']);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(await listed()).toEqual(ownBefore);
  });

  it('takes back the archives it imported when a later one fails to import', async () => {
    // ctr names this one (its manifest.json is whole) but fails on it: its config is not in it.
    const broken = join(dir, 'broken.docker.tar');
    mkdirSync(join(dir, 'broken'));
    writeFileSync(join(dir, 'broken', 'manifest.json'), JSON.stringify([{ Config: 'missing.json', RepoTags: ['example.test/machineadm/broken:1.0'], Layers: [] }]));
    execFileSync('tar', ['-cf', broken, '-C', join(dir, 'broken'), 'manifest.json']);
    const m = machine('broken', [{ url: localUrl, sha256: sha256(archives.local) }, { url: pathToFileURL(broken).href, sha256: sha256(broken) }]);
    const result = await run(m, ['prepare', '--only', STEP]);
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stderr).toContain('image config "missing.json" not found');
    // Else the first archive's image stays, in no record: a rerun skips it and reset leaves it.
    expect(await listed()).toEqual(ownBefore);
  });

  it('reset removes an image a run imported and was killed before recording, which the next run found imported', async () => {
    const m = machine('killed', [{ url: localUrl, sha256: sha256(archives.local) }]);
    // The real ctr, which kills machineadm with SIGKILL once an import has succeeded: the run ends
    // between the import and the state file's record of it.
    const bin = join(dir, 'killing-bin');
    mkdirSync(bin);
    const realCtr = execFileSync('sh', ['-c', 'command -v ctr'], { encoding: 'utf8' }).trim();
    writeFileSync(join(bin, 'ctr'), `#!/bin/sh\n"${realCtr}" "$@" || exit\ncase "$*" in *"images import"*) kill -KILL "$PPID" ;; esac\n`, { mode: 0o755 });
    const killed = spawnSync(join(REPO, 'node_modules/.bin/node'), [join(REPO, 'src/cli/bin.ts'), 'prepare', '--only', STEP, '-c', m.config, '--root', m.root, '--state-dir', m.state], {
      cwd: REPO,
      env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}`, [CONTAINERD_ADDRESS_ENV]: socket },
      encoding: 'utf8',
    });
    expect(killed.signal, killed.stdout + killed.stderr).toBe('SIGKILL');
    expect(await listed()).toContain(LOCAL);
    const state = join(m.state, 'state.json');
    expect(existsSync(state) ? (JSON.parse(readFileSync(state, 'utf8')) as { steps: Record<string, unknown> }).steps[STEP] : undefined).toBeUndefined();

    const again = await run(m, ['prepare', '--only', STEP]);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    const reset = await run(m, ['reset']);
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(await listed()).toEqual(ownBefore);
  });

  it("refuses an archive whose image is for another architecture than the machine's, and leaves none of it in containerd", async () => {
    // ctr imports a single image of another architecture without a word: the kubelet would then
    // run it and fail with "exec format error".
    const other = process.arch === 'arm64' ? 'amd64' : 'arm64';
    const layout = join(dir, 'other-arch');
    await exec('umoci', ['init', '--layout', layout]);
    await exec('umoci', ['new', '--image', `${layout}:other`]);
    await exec('umoci', ['config', '--image', `${layout}:other`, '--architecture', other]);
    const archive = join(dir, 'other.oci.tar');
    await skopeo('copy', '--quiet', `oci:${layout}:other`, `oci-archive:${archive}:example.test/machineadm/other:1.0`);
    const m = machine('other-arch', [{ url: pathToFileURL(archive).href, sha256: sha256(archive) }]);
    for (const attempt of ['first', 'second']) {
      const result = await run(m, ['prepare', '--only', STEP]);
      expect(result.code, `${attempt} run: ${result.stdout}${result.stderr}`).toBe(1);
      expect(result.stderr).toContain(`spec.kubernetes.install.images[0].url: file://${archive} holds example.test/machineadm/other:1.0 for linux/${other}, not for this machine (linux/${process.arch === 'arm64' ? 'arm64' : 'amd64'})`);
      expect(await listed()).toEqual(ownBefore);
    }
  });

  it('leaves no staged archive and creates none of the host folders containerd, skopeo and machineadm use by default', () => {
    expect(absentBefore.filter((p) => existsSync(p))).toEqual([]);
  });
});

describe('reading image archives (the real tar writes them)', () => {
  const dir = scratchDir('machineadm-tar-');
  async function* blocksOf(bytes: Buffer, size = 700): AsyncGenerator<Uint8Array> {
    for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
  }
  function tar(name: string, members: Record<string, string>, args: string[] = []): Buffer {
    const from = join(dir, `${name}-content`);
    for (const [member, text] of Object.entries(members)) {
      mkdirSync(join(from, member, '..'), { recursive: true });
      writeFileSync(join(from, member), text);
    }
    execFileSync('tar', ['-cf', join(dir, name), ...args, '-C', from, ...Object.keys(members).map((m) => `./${m}`)]);
    return readFileSync(join(dir, name));
  }
  const index = (annotations: Record<string, string>) => JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: `sha256:${'1'.repeat(64)}`, size: 1, annotations }] });

  it.each([
    ['an OCI layout named by ref.name', { 'blobs/sha256/x': 'x'.repeat(3000), 'index.json': index({ 'org.opencontainers.image.ref.name': 'registry.k8s.io/pause:3.10' }) }, ['registry.k8s.io/pause:3.10']],
    ['an OCI layout named by io.containerd.image.name', { 'index.json': index({ 'io.containerd.image.name': 'docker.io/library/busybox:1.36', 'org.opencontainers.image.ref.name': '1.36' }) }, ['docker.io/library/busybox:1.36']],
    ['a docker archive, its RepoTags normalized as ctr does', { 'manifest.json': JSON.stringify([{ Config: 'c.json', RepoTags: ['busybox:1.36', 'quay.io/x/y'], Layers: [] }]) }, ['docker.io/library/busybox:1.36', 'quay.io/x/y:latest']],
  ])('names the images of %s', async (_what, members, refs) => {
    const found = await readTarMembers(blocksOf(tar(`a-${refs[0]!.replace(/\W/g, '')}.tar`, members, ['--format=pax'])), NAMING_MEMBERS);
    expect(found).toBeInstanceOf(Map);
    expect(imageRefsOf(found as Map<string, Buffer>)).toEqual({ refs });
  });

  it.each([
    ['an OCI name the kubelet never asks for', { 'index.json': index({ 'org.opencontainers.image.ref.name': 'hello:2.0' }) }, 'which the kubelet asks for as docker.io/library/hello:2.0'],
    ['an OCI image named only by a tag', { 'index.json': index({ 'org.opencontainers.image.ref.name': '2.0' }) }, 'named only by the tag "2.0"'],
    ['a docker archive without RepoTags', { 'manifest.json': JSON.stringify([{ Config: 'c.json', RepoTags: [], Layers: [] }]) }, 'without RepoTags'],
    ['a tar of something else', { 'README': 'hi' }, 'holds neither index.json'],
  ])('refuses %s', async (_what, members, problem) => {
    const found = await readTarMembers(blocksOf(tar(`b-${problem.replace(/\W/g, '')}.tar`, members)), NAMING_MEMBERS);
    expect(found).toBeInstanceOf(Map);
    expect((imageRefsOf(found as Map<string, Buffer>) as { problem: string }).problem).toContain(problem);
  });

  it('reads the names of GNU headers that carry access and change times (tar -G)', async () => {
    // GNU headers keep those times where ustar keeps a name's prefix.
    const found = await readTarMembers(blocksOf(tar('gnu-times.tar', { 'index.json': index({ 'org.opencontainers.image.ref.name': 'registry.k8s.io/pause:3.10' }) }, ['--format=gnu', '--incremental'])), NAMING_MEMBERS);
    expect(found).toBeInstanceOf(Map);
    expect(imageRefsOf(found as Map<string, Buffer>)).toEqual({ refs: ['registry.k8s.io/pause:3.10'] });
  });

  it('keeps its place past a name longer than a ustar header holds (GNU long names)', async () => {
    const deep = `${'d'.repeat(120)}/index.json`;
    const found = await readTarMembers(blocksOf(tar('long.tar', { [deep]: '{}', 'manifest.json': '[]' }, ['--format=gnu'])), NAMING_MEMBERS);
    expect([...(found as Map<string, Buffer>).keys()]).toEqual(['manifest.json']);
  });

  /** A ustar header block; its size field says `size` (octal), its checksum is right. */
  function header(name: string, size: number, type: string): Buffer {
    const block = Buffer.alloc(512);
    block.write(name, 0);
    for (const [at, value] of [[100, '0000644'], [108, '0000000'], [116, '0000000'], [124, size.toString(8).padStart(11, '0')], [136, '00000000000']] as const) block.write(`${value}\0`, at);
    block.write(type, 156);
    block.write('ustar\0' + '00', 257);
    block.fill(0x20, 148, 156);
    const sum = block.reduce((a, b) => a + b, 0);
    block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
    return block;
  }
  const padded = (data: Buffer) => Buffer.concat([data, Buffer.alloc((512 - (data.length % 512)) % 512)]);

  it('finds the index past a member whose size only its pax header gives (a layer of 8 GiB or more)', async () => {
    // As Go's archive/tar (docker save, skopeo) and Python write a member too large for the
    // header's 11 octal digits: the size in a pax record, 0 in the member's own header.
    const layer = Buffer.alloc(3000, 'x');
    let record = ` size=${layer.length}\n`;
    record = `${record.length + String(record.length + 2).length}${record}`;
    const named = Buffer.from(index({ 'org.opencontainers.image.ref.name': 'registry.k8s.io/pause:3.10' }));
    const archive = Buffer.concat([
      header('PaxHeaders/layer', Buffer.byteLength(record), 'x'), padded(Buffer.from(record)),
      header(`blobs/sha256/${'a'.repeat(64)}`, 0, '0'), padded(layer),
      header('index.json', named.length, '0'), padded(named),
      Buffer.alloc(1024),
    ]);
    writeFileSync(join(dir, 'pax-size.tar'), archive);
    // tar itself reads it so.
    expect(execFileSync('tar', ['-tvf', join(dir, 'pax-size.tar')], { encoding: 'utf8' })).toMatch(/ 3000 .*blobs\/sha256\/a{64}\n.*index\.json\n$/);
    const found = await readTarMembers(blocksOf(archive), NAMING_MEMBERS);
    expect(found).toBeInstanceOf(Map);
    expect(imageRefsOf(found as Map<string, Buffer>)).toEqual({ refs: ['registry.k8s.io/pause:3.10'] });
  });

  it('says a compressed or cut archive is not one', async () => {
    // Random bytes: a gzip of them is larger than one tar header.
    const whole = tar('whole.tar', { 'index.json': index({ 'org.opencontainers.image.ref.name': 'registry.k8s.io/pause:3.10' }), 'blobs/b': randomBytes(5000).toString('base64') });
    expect(await readTarMembers(blocksOf(gzipSync(whole)), NAMING_MEMBERS)).toEqual({ problem: 'it is gzip-compressed, not a tar' });
    const cut = await readTarMembers(blocksOf(whole.subarray(0, 2048)), NAMING_MEMBERS);
    expect(cut).toEqual({ problem: 'it ends inside a member (a truncated file)' });
  });

  it.each([
    ['busybox', 'docker.io/library/busybox:latest'],
    ['library/busybox:1.36', 'docker.io/library/busybox:1.36'],
    ['localhost/x', 'localhost/x:latest'],
    ['127.0.0.1:5000/a/b:1', '127.0.0.1:5000/a/b:1'],
    [`registry.k8s.io/pause:3.10@sha256:${'a'.repeat(64)}`, `registry.k8s.io/pause@sha256:${'a'.repeat(64)}`],
    ['index.docker.io/x/y:2', 'docker.io/x/y:2'],
  ])('normalizes %s as the CRI does: %s', (ref, normalized) => {
    expect(normalizeImageRef(ref)).toBe(normalized);
  });

  it("reads ctr's image table and content labels", () => {
    const digest = (hex: string) => `sha256:${hex.repeat(64)}`;
    const [m, c, l, i] = [digest('5'), digest('c'), digest('9'), digest('7')];
    const table = `REF TYPE DIGEST SIZE PLATFORMS LABELS\nexample.test/a:1 application/vnd.oci.image.manifest.v1+json ${m} 780.0 B linux/amd64 io.cri-containerd.image=managed\n${c} application/vnd.oci.image.manifest.v1+json ${m} 780.0 B linux/amd64 io.cri-containerd.image=managed\n`;
    expect(parseImageTable(table)).toEqual([
      { ref: 'example.test/a:1', digest: m },
      { ref: c, digest: m },
    ]);
    // A manifest names its config, an index its manifests.
    const content = `DIGEST\tSIZE\tAGE\tLABELS\n${m}\t423B\t2 minutes\tcontainerd.io/gc.ref.content.config=${c},containerd.io/gc.ref.content.l.0=${l}\n${i}\t1B\t1 minute\tcontainerd.io/gc.ref.content.m.0=${m}\n`;
    expect(configsByTarget(content)(m)).toEqual([c]);
    expect(configsByTarget(content)(i)).toEqual([c]);
    expect(configsByTarget(content)(l)).toEqual([]);
  });
});
