import { mkdirSync, symlinkSync, writeFileSync, truncateSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHost } from '../../src/host/index.ts';
import { loadConfig, NoMachineConfigError, type LoadOptions } from '../../src/config/load.ts';
import { redactConfig } from '../../src/config/redact.ts';
import { parseWith } from '../../src/config/schema/dsl.ts';
import { secret } from '../../src/config/schema/secret-field.ts';
import { ConfigError, type ConfigIssue } from '../../src/errors.ts';
import { MACHINECONFIG_CONTENT_TYPE } from '../../src/config/mime.ts';
import { scratchDir } from '../support/tmp.ts';
import { multipart } from './helpers/servers.ts';

const HEAD = 'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\n';
const dir = scratchDir();
let n = 0;

function file(content: string | Buffer, name = `c${++n}.yaml`): string {
  const path = join(dir, name);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, content);
  return path;
}

function host(options: { root?: string; offline?: boolean; env?: Record<string, string> } = {}) {
  return createHost({ root: options.root ?? scratchDir(), offline: options.offline ?? false, env: options.env ?? {} });
}

async function issues(sources: string[], options: LoadOptions = {}, h = host()): Promise<ConfigIssue[]> {
  const error = await loadConfig(h, sources, options).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof ConfigError)) throw new Error(`expected a ConfigError, got ${String(error)}`);
  expect(error.exitCode).toBe(2);
  return error.issues;
}

describe('one source', () => {
  it('reads a YAML file and fills in defaults', async () => {
    const { config, sources } = await loadConfig(host(), [file(`${HEAD}spec:\n  kernelModules: [overlay]\n`)]);
    expect(config.spec.kernelModules).toEqual(['overlay']);
    expect(config.spec.security.offline).toBe(false);
    expect(sources).toHaveLength(1);
  });

  it('reads JSON', async () => {
    const path = file(JSON.stringify({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { sysctls: { 'net.ipv4.ip_forward': '1' } } }), 'x.json');
    expect((await loadConfig(host(), [path])).config.spec.sysctls).toEqual({ 'net.ipv4.ip_forward': '1' });
  });

  it('reports every problem at once, in file order, with line, column, field path and what to do', async () => {
    const path = file(
      [
        HEAD.trimEnd(),
        'spec:', //                                 3
        '  sysctls:', //                            4
        '    net/ipv4/ip_forward: "1"', //          5
        '  containerd:', //                         6
        '    cgroupDriver: sistemd', //             7
        '    registries:', //                       8
        '      docker.io:', //                      9
        '        mirrors:', //                      10
        '          - url: ftp://mirror', //         11
        '            bogus: 1', //                  12
        '  kernelModuls: [overlay]', //             13
      ].join('\n'),
    );
    const found = await issues([path]);
    expect(found.map((i) => [i.line, i.column, i.path])).toEqual([
      [5, 5, 'spec.sysctls["net/ipv4/ip_forward"]'],
      [7, 5, 'spec.containerd.cgroupDriver'],
      [11, 13, 'spec.containerd.registries["docker.io"].mirrors[0].url'],
      [12, 13, 'spec.containerd.registries["docker.io"].mirrors[0].bogus'],
      [13, 3, 'spec.kernelModuls'],
    ]);
    expect(found.every((i) => i.source === path && i.hint)).toBe(true);
    expect(found[1]!.hint).toMatch(/did you mean "systemd"/);
    expect(found[4]!.hint).toMatch(/did you mean "kernelModules"/);
  });

  it.each([
    ['an unknown apiVersion, naming the supported ones', 'apiVersion: machineadm.cluster.x-k8s.io/v9\nkind: MachineConfig\nspec: {}\n', /"machineadm.cluster.x-k8s.io\/v9" is not supported; this machineadm reads machineadm.cluster.x-k8s.io\/v1alpha1/, 1],
    ['a foreign apiVersion', 'apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n', /"kubeadm.k8s.io\/v1beta4" is not supported/, 1],
    ['an apiVersion that is not a string, quoting it', 'apiVersion: 5\nkind: MachineConfig\n', /^5 is not supported; this machineadm reads/, 1],
    ['a document that is not a MachineConfig', '#cloud-config\npackages: [curl]\n', /not a MachineConfig: apiVersion and kind are missing/, 2],
    ['a list', '- a\n- b\n', /not a MachineConfig: the document is a list/, 1],
    ['an empty file', '# nothing\n', /is empty/, undefined],
    ['malformed YAML', `${HEAD}spec:\n  a: [1\n`, /not valid YAML or JSON/, undefined],
    ['a duplicate key', `${HEAD}spec:\n  kernelModules: []\n  kernelModules: [overlay]\n`, /key "kernelModules" appears twice/, 5],
    ['an HTML page', '<!doctype html><html><body>login</body></html>', /HTML page/, 1],
    ['two documents', `${HEAD}---\n${HEAD}`, /holds 2 YAML documents/, 3],
  ])('refuses %s', async (_name, text, message, line) => {
    const path = file(text);
    const [first, ...rest] = await issues([path]);
    expect(rest).toEqual([]);
    expect(first!.message).toMatch(message);
    expect(first!.source).toBe(path);
    if (line !== undefined) expect(first!.line).toBe(line);
  });

  it('refuses invalid UTF-8 naming the source and line', async () => {
    const path = file(Buffer.concat([Buffer.from(`${HEAD}metadata:\n  name: caf`), Buffer.from([0xe9]), Buffer.from('\n')]));
    const [first] = await issues([path]);
    expect(first).toMatchObject({ source: path, line: 4 });
    expect(first!.message).toMatch(/not valid UTF-8/);
  });

  it('refuses a 100 MB file over the size limit without reading it', async () => {
    const path = file('');
    truncateSync(path, 100 * 1024 * 1024);
    const started = Date.now();
    const [first] = await issues([path]);
    expect(first!.message).toMatch(/larger than the limit of 8 MiB \(100 MiB\)/);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('names a missing file', async () => {
    const [first] = await issues([join(dir, 'nope.yaml')]);
    expect(first).toMatchObject({ message: 'no such file or directory', hint: 'check the -c/--config path' });
  });

  it('reads a directory given through a symbolic link, as the directory it points to', async () => {
    file(`${HEAD}spec:\n  kernelModules: [overlay]\n`, 'linked-target/10-a.yaml');
    const link = join(dir, 'linked.d');
    symlinkSync(join(dir, 'linked-target'), link);
    const { config, sources } = await loadConfig(host(), [link]);
    expect(config.spec.kernelModules).toEqual(['overlay']);
    expect(sources).toEqual([join(link, '10-a.yaml')]);
  });

  it('stops at the size limit for a link to a large file and for a device that never ends', async () => {
    const big = file(`${HEAD}spec: {}\n${'#'.repeat(4096)}\n`);
    const link = join(dir, `link-${++n}.yaml`);
    symlinkSync(big, link);
    const started = Date.now();
    for (const source of [link, '/dev/zero']) {
      const [first] = await issues([source], { maxBytes: 1024 });
      expect(first).toMatchObject({ source, message: 'larger than the limit of 1 KiB' });
    }
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('names the file of a directory that has the problem, not only the directory', async () => {
    const big = file(`${HEAD}spec: {}\n${'#'.repeat(4096)}\n`, 'sized.d/20-big.yaml');
    file(`${HEAD}spec: {}\n`, 'sized.d/10-small.yaml');
    const [first, ...rest] = await issues([join(dir, 'sized.d')], { maxBytes: 1024 });
    expect(rest).toEqual([]);
    expect(first).toMatchObject({ source: big, message: expect.stringMatching(/larger than the limit of 1 KiB/) });
  });

  it('resolves relative paths against the given directory', async () => {
    file(`${HEAD}spec: {}\n`, 'rel/base.yaml');
    expect((await loadConfig(host(), ['rel/base.yaml'], { cwd: dir })).sources).toEqual([join(dir, 'rel/base.yaml')]);
  });
});

describe('several sources', () => {
  it('merges in order: later wins, maps merge, lists replace, null removes', async () => {
    const a = file(`${HEAD}spec:\n  kernelModules: [overlay, br_netfilter]\n  sysctls: { a.b: "1", c.d: "2", e.f: "3" }\n`);
    const b = file(`${HEAD}spec:\n  kernelModules: [overlay]\n  sysctls: { c.d: "20", e.f: null }\n`);
    const { config, sources } = await loadConfig(host(), [a, b]);
    expect(config.spec.kernelModules).toEqual(['overlay']);
    expect(config.spec.sysctls).toEqual({ 'a.b': '1', 'c.d': '20' });
    expect(sources).toEqual([a, b]);
  });

  it('checks each source on its own, so every problem names its own file and line', async () => {
    const a = file(`${HEAD}spec:\n  kernelModules: 5\n`);
    const b = file(`${HEAD}spec:\n\n  sysctls: []\n`);
    const found = await issues([a, b]);
    expect(found.map((i) => [i.source, i.line, i.path])).toEqual([
      [a, 4, 'spec.kernelModules'],
      [b, 5, 'spec.sysctls'],
    ]);
  });

  it('places a problem of the merged whole at the last source that wrote the field', async () => {
    const a = file(`${HEAD}spec:\n  kernelModules: [overlay]\n`);
    const b = file(`${HEAD}spec:\n  files:\n    - path: /etc/x\n`);
    const found = await issues([a, b]);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ source: b, line: 5, path: 'spec.files[0]' });
    expect(found[0]!.message).toMatch(/content or source/);
  });

  it('places a problem of the merged whole at the source whose list replaced the earlier one', async () => {
    const a = file(`${HEAD}spec:\n  files:\n    - path: /etc/a\n      content: a\n`);
    const b = file(`${HEAD}spec:\n  files:\n    - content: b\n`);
    const found = await issues([a, b]);
    expect(found.map((i) => [i.source, i.line, i.path])).toEqual([[b, 5, 'spec.files[0].path']]);
  });

  it('places a missing field at the source that wrote its map after an earlier one removed it', async () => {
    const a = file(`${HEAD}spec:\n  kubernetes:\n    role: worker\n    token: abcdef.0123456789abcdef\n`);
    const b = file(`${HEAD}spec:\n  kubernetes: null\n`);
    const c = file(`${HEAD}spec:\n  kubernetes:\n    role: worker\n    bootstrap: join\n    version: v1.31.2\n    controlPlaneEndpoint: 10.0.0.10:6443\n    caCertHashes: ["sha256:${'0'.repeat(64)}"]\n`);
    const found = await issues([a, b, c]);
    expect(found.map((i) => [i.source, i.path])).toEqual([[c, 'spec.kubernetes.token']]);
  });

  it('lists problems by source in the order the sources were given, whatever kind each problem is', async () => {
    const a = file(`${HEAD}spec:\n  kernelModules: 5\n`);
    const b = file(`${HEAD}spec:\n  sysctls: [\n`);
    const c = join(dir, 'missing.yaml');
    const d = file(`${HEAD}spec:\n  sysctls: { a.b: "1", a.b: "2" }\n`);
    const found = await issues([a, b, c, d]);
    expect(found.map((i) => i.source)).toEqual([a, b, c, d]);
  });

  it('reads and checks the other drop-ins of a directory when one of them cannot be read', async () => {
    const d = join(dir, 'partly.d');
    file(`${HEAD}spec:\n  kernelModules: [overlay]\n`, 'partly.d/10-a.yaml');
    symlinkSync(join(dir, 'nothing-here.yaml'), join(d, '20-link.yaml'));
    file(`${HEAD}spec:\n  kernelModules: 5\n`, 'partly.d/30-b.yaml');
    const found = await issues([d]);
    expect(found.map((i) => [i.source, i.path])).toEqual([
      [join(d, '20-link.yaml'), ''],
      [join(d, '30-b.yaml'), 'spec.kernelModules'],
    ]);
  });

  it('names a drop-in that links out of --root, and still reads and checks the other drop-ins', async () => {
    const root = scratchDir();
    mkdirSync(join(root, 'etc/machineadm/config.d'), { recursive: true });
    writeFileSync(join(root, 'etc/machineadm/config.d/10-a.yaml'), `${HEAD}spec:\n  kernelModules: [overlay]\n`);
    symlinkSync(file(`${HEAD}spec: {}\n`), join(root, 'etc/machineadm/config.d/20-out.yaml'));
    writeFileSync(join(root, 'etc/machineadm/config.d/30-b.yaml'), `${HEAD}spec:\n  kernelModules: 5\n`);
    const found = await issues([], {}, host({ root }));
    expect(found.map((i) => [i.source, i.path])).toEqual([
      ['/etc/machineadm/config.d/20-out.yaml', ''],
      ['/etc/machineadm/config.d/30-b.yaml', 'spec.kernelModules'],
    ]);
    expect(found[0]!.message).toMatch(/resolves through a symbolic link to .*, outside the root/);
  });

  it('reads a directory in lexical order, leaving out other and hidden files', async () => {
    const d = join(dir, 'conf.d');
    file(`${HEAD}spec:\n  sysctls: { a.b: "from-20" }\n`, 'conf.d/20-site.yaml');
    file(`${HEAD}spec:\n  sysctls: { a.b: "from-10", c.d: "x" }\n`, 'conf.d/10-image.yml');
    file('{"apiVersion": "machineadm.cluster.x-k8s.io/v1alpha1", "kind": "MachineConfig", "spec": {"kernelModules": ["overlay"]}}', 'conf.d/30-extra.json');
    file('not: [yaml', 'conf.d/README.md');
    file('broken: [', 'conf.d/.20-site.yaml.swp.yaml');
    const { config, sources } = await loadConfig(host(), [d]);
    expect(config.spec.sysctls).toEqual({ 'a.b': 'from-20', 'c.d': 'x' });
    expect(sources.map((s) => s.slice(d.length + 1))).toEqual(['10-image.yml', '20-site.yaml', '30-extra.json']);
  });

  it('reads a directory in byte order, also for names beyond the Basic Multilingual Plane', async () => {
    const d = join(dir, 'bytes.d');
    // UTF-8 puts U+E000 (EE 80 80) before U+1F600 (F0 9F 98 80); UTF-16 puts it after (D83D DE00).
    file(`${HEAD}spec:\n  sysctls: { vm.swappiness: "1" }\n`, 'bytes.d/50-\u{E000}.yaml');
    file(`${HEAD}spec:\n  sysctls: { vm.swappiness: "2" }\n`, 'bytes.d/50-\u{1F600}.yaml');
    const { config, sources } = await loadConfig(host(), [d]);
    expect(sources.map((s) => s.slice(d.length + 1))).toEqual(['50-\u{E000}.yaml', '50-\u{1F600}.yaml']);
    expect(config.spec.sysctls).toEqual({ 'vm.swappiness': '2' });
  });

  it('reads the default sources under --root when no -c is given', async () => {
    const root = scratchDir();
    mkdirSync(join(root, 'etc/machineadm/config.d'), { recursive: true });
    writeFileSync(join(root, 'etc/machineadm/config.yaml'), `${HEAD}spec:\n  kernelModules: [overlay]\n`);
    writeFileSync(join(root, 'etc/machineadm/config.d/50-x.yaml'), `${HEAD}spec:\n  kernelModules: [br_netfilter]\n`);
    const { config, sources } = await loadConfig(host({ root }), []);
    expect(config.spec.kernelModules).toEqual(['br_netfilter']);
    expect(sources).toEqual(['/etc/machineadm/config.yaml', '/etc/machineadm/config.d/50-x.yaml']);
  });

  it.each([
    ['without a config.yaml', false],
    ['beside a config.yaml', true],
  ])('says that config.d is a file where the folder of drop-ins belongs (%s), not that there is no configuration', async (_name, withYaml) => {
    const root = scratchDir();
    mkdirSync(join(root, 'etc/machineadm'), { recursive: true });
    writeFileSync(join(root, 'etc/machineadm/config.d'), `${HEAD}spec:\n  kernelModules: [br_netfilter]\n`);
    if (withYaml) writeFileSync(join(root, 'etc/machineadm/config.yaml'), `${HEAD}spec:\n  kernelModules: [overlay]\n`);
    const found = await issues([], {}, host({ root }));
    expect(found).toEqual([expect.objectContaining({ source: '/etc/machineadm/config.d/', message: expect.stringMatching(/is a file, not a folder/), hint: expect.stringMatching(/config\.d\/NAME\.yaml/) })]);
  });

  it('says where it looked when there is no configuration at all', async () => {
    const [first] = await issues([]);
    expect(first!.message).toMatch(/no configuration found \(looked at \/etc\/machineadm\/config.yaml, \/etc\/machineadm\/config.d\/ under the root\)/);
  });
});

describe('standard input', () => {
  it('reads "-" from the given reader', async () => {
    const { config, sources } = await loadConfig(host(), ['-'], { readStdin: async () => Buffer.from(`${HEAD}spec:\n  kernelModules: [overlay]\n`) });
    expect(config.spec.kernelModules).toEqual(['overlay']);
    expect(sources).toEqual(['stdin']);
  });

  it('refuses "-" twice', async () => {
    const [first] = await issues(['-', '-'], { readStdin: async () => Buffer.from('') });
    expect(first!.message).toMatch(/read only once/);
  });

  it('reports problems of stdin with its lines', async () => {
    const [first] = await issues(['-'], { readStdin: async () => Buffer.from(`${HEAD}spec:\n  kernelModules: {}\n`) });
    expect(first).toMatchObject({ source: 'stdin', line: 4, column: 3, path: 'spec.kernelModules' });
  });
});

describe('pins, offline and unsupported sources', () => {
  const text = `${HEAD}spec:\n  kernelModules: [overlay]\n`;
  const sha = createHash('sha256').update(text).digest('hex');

  it('accepts a file:// source whose content matches its pin', async () => {
    const path = file(text);
    expect((await loadConfig(host(), [`file://${path}#sha256=${sha}`])).config.spec.kernelModules).toEqual(['overlay']);
  });

  it('checks the pin before parsing: a wrong pin is the only problem reported', async () => {
    const path = file('this: [is not yaml');
    const [first, ...rest] = await issues([`file://${path}#sha256=${sha}`]);
    expect(rest).toEqual([]);
    expect(first!.message).toMatch(new RegExp(`not the pinned ${sha}`));
  });

  it.each([
    ['a pin that is not hex', 'file:///x.yaml#sha256=abc', /not 64 hex digits/],
    ['plain http', 'http://example.test/c.yaml', /plain http:\/\/ is not accepted/],
    ['an unknown scheme', 'ftp://example.test/c.yaml', /unknown kind of source "ftp"/],
    ['an unknown metadata path', 'imds://aws/meta-data', /unknown instance metadata source/],
    ['an unknown fragment parameter', 'https://example.test/c.yaml#md5=x', /unknown URL fragment parameter "md5"/],
    ['a pin on instance metadata, which nothing would check', `imds://aws/user-data#sha256=${'a'.repeat(64)}`, /unknown URL fragment parameter "sha256"/],
    ['a CA on a file:// source', 'file:///x.yaml#ca=/ca.pem', /unknown URL fragment parameter "ca"/],
    ['a pin given twice, one of which nothing would check', `file:///x.yaml#sha256=${sha}&sha256=${'b'.repeat(64)}`, /URL fragment parameter "sha256" given more than once/],
    ['a CA given twice', 'https://example.test/c.yaml#ca=/a.pem&ca=/b.pem', /URL fragment parameter "ca" given more than once/],
    ['a file:// URL with a broken %-escape', 'file:///etc/%zz.yaml', /not a valid file:\/\/ URL/],
  ])('refuses %s before reading anything', async (_name, source, message) => {
    const [first] = await issues([source]);
    expect(first!.message).toMatch(message);
  });

  it('hides the password and the query of a URL it refuses, whatever its scheme', async () => {
    const found = await issues(['ftp://ops:hunter2@example.test/c.yaml?token=abc']);
    expect(found[0]!.source).toBe('ftp://ops:<redacted>@example.test/c.yaml?token=<redacted>');
    expect(JSON.stringify(found)).not.toMatch(/hunter2|token=abc/);
  });

  it('with --offline refuses every network source at once, naming each, before reading any source', async () => {
    let stdinRead = false;
    const found = await issues(['-', 'https://config.example/a.yaml?token=abc', 'imds://user-data'], { readStdin: async () => ((stdinRead = true), Buffer.from('')) }, host({ offline: true }));
    expect(found.map((i) => i.source)).toEqual(['https://config.example/a.yaml?token=<redacted>', 'imds://user-data']);
    expect(found.every((i) => /--offline/.test(i.message))).toBe(true);
    expect(stdinRead).toBe(false);
    expect(JSON.stringify(found)).not.toContain('token=abc');
  });
});

describe('user data in files', () => {
  const config = `${HEAD}spec:\n  kernelModules: [overlay]\n`;

  it('takes the MachineConfig part of a multipart file', async () => {
    const path = file(multipart([{ type: 'text/x-shellscript', body: '#!/bin/sh\n' }, { type: MACHINECONFIG_CONTENT_TYPE, body: config }]));
    const { config: loaded, sources } = await loadConfig(host(), [path]);
    expect(loaded.spec.kernelModules).toEqual(['overlay']);
    expect(sources).toEqual([`${path} (part 2)`]);
  });

  it("takes the part as cloud-init's make-mime types it (text/ prefixed)", async () => {
    const path = file(multipart([{ type: 'text/cloud-config', body: '#cloud-config\n' }, { type: `text/${MACHINECONFIG_CONTENT_TYPE}`, body: config }]));
    const { config: loaded, sources } = await loadConfig(host(), [path]);
    expect(loaded.spec.kernelModules).toEqual(['overlay']);
    expect(sources).toEqual([`${path} (part 2)`]);
  });

  it('refuses a part that means to be a MachineConfig under a mistyped content type, instead of doing nothing', async () => {
    const path = file(multipart([{ type: 'text/x-shellscript', body: '#!/bin/sh\n' }, { type: 'application/machineadm', body: config }]));
    const [first] = await issues([path]);
    expect(first).toMatchObject({ source: `${path} (part 2)`, message: 'has Content-Type application/machineadm, which machineadm does not read' });
    expect(first!.hint).toContain(MACHINECONFIG_CONTENT_TYPE);
  });

  it('reads gzip-compressed user data', async () => {
    const path = file(gzipSync(multipart([{ type: MACHINECONFIG_CONTENT_TYPE, body: config }])));
    expect((await loadConfig(host(), [path])).config.spec.kernelModules).toEqual(['overlay']);
  });

  it('names a truncated gzip file as the file it is, not as a MIME part', async () => {
    const path = file(gzipSync(`${HEAD}spec:\n  kernelModules: [overlay]\n`).subarray(0, 20));
    const [first, ...rest] = await issues([path]);
    expect(rest).toEqual([]);
    expect(first).toMatchObject({ source: path, message: 'gzip content is corrupt (unexpected end of file)' });
    expect(first!.hint).not.toMatch(/part/);
  });

  it('reports a MachineConfig part that does not parse, with the line in the whole user data', async () => {
    const text = multipart([{ type: 'text/x-shellscript', body: '#!/bin/sh\necho\n' }, { type: MACHINECONFIG_CONTENT_TYPE, body: `${HEAD}spec:\n  kernelModules: {}\n` }]);
    const path = file(text);
    const [first] = await issues([path]);
    const line = text.split('\n').indexOf('  kernelModules: {}') + 1;
    expect(first).toMatchObject({ source: `${path} (part 2)`, line, path: 'spec.kernelModules' });
  });

  it('reports invalid UTF-8 in a plain MachineConfig part at its line in the whole user data', async () => {
    const body = Buffer.concat([Buffer.from(`${HEAD}metadata:\n  name: caf`), Buffer.from([0xe9]), Buffer.from('\n')]);
    const text = multipart([{ type: 'text/x-shellscript', body: '#!/bin/sh\necho\n' }, { type: MACHINECONFIG_CONTENT_TYPE, body }]);
    const path = file(Buffer.from(text, 'latin1'));
    const [first] = await issues([path]);
    const line = text.split('\n').findIndex((l) => l.startsWith('  name: caf')) + 1;
    expect(first).toMatchObject({ source: `${path} (part 2)`, line });
    expect(first!.message).toMatch(/not valid UTF-8/);
  });

  it('treats multipart user data without a MachineConfig as "nothing to do" (exit 0)', async () => {
    const path = file(multipart([{ type: 'text/x-shellscript', body: '#!/bin/sh\n' }, { type: 'text/cloud-config', body: '#cloud-config\n' }]));
    const error = await loadConfig(host(), [path]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoMachineConfigError);
    expect((error as NoMachineConfigError).exitCode).toBe(0);
    expect((error as Error).message).toMatch(/nothing to do/);
  });

  it('does nothing when the user data does not opt in, even with an image default beside it', async () => {
    const image = file(config);
    const userData = file(multipart([{ type: 'text/x-shellscript', body: '#!/bin/sh\n' }]));
    await expect(loadConfig(host(), [image, userData])).rejects.toBeInstanceOf(NoMachineConfigError);
  });

  it('merges an image default under user data that opts in', async () => {
    const image = file(`${HEAD}spec:\n  sysctls: { a.b: "image" }\n  kernelModules: [overlay]\n`);
    const userData = file(multipart([{ type: MACHINECONFIG_CONTENT_TYPE, body: `${HEAD}spec:\n  sysctls: { c.d: "user" }\n` }]));
    const { config: loaded } = await loadConfig(host(), [image, userData]);
    expect(loaded.spec.sysctls).toEqual({ 'a.b': 'image', 'c.d': 'user' });
    expect(loaded.spec.kernelModules).toEqual(['overlay']);
  });
});

describe('secrets', () => {
  it('never quotes a secret literal in an error, whatever rule reports it', async () => {
    const value = 'Sup3rSecretValue42';
    const path = file(`${HEAD}spec:\n  domainJoin:\n    domain: corp.example\n    credentials: { username: admin, password: "${value}" }\n  containerd:\n    cgroupDriver: "${value}"\n`);
    const found = await issues([path]);
    expect(found.length).toBeGreaterThan(0);
    expect(JSON.stringify(found)).not.toContain(value);
    expect(found.find((i) => i.path === 'spec.containerd.cgroupDriver')!.message).toContain('<redacted>');
  });

  it('never quotes even the start of a long secret literal that a shortened message would show', async () => {
    const value = `Long-Secret-${'q'.repeat(100)}`;
    const path = file(`${HEAD}spec:\n  domainJoin:\n    domain: corp.example\n    credentials: { username: admin, password: "${value}" }\n  containerd:\n    cgroupDriver: "${value}"\n`);
    const found = await issues([path]);
    expect(found.find((i) => i.path === 'spec.containerd.cgroupDriver')!.message).toMatch(/^"<redacted>\.\.\." is not one of/);
    expect(JSON.stringify(found)).not.toContain('Long-Secret');
  });

  it('quotes at most 80 characters of a wrong value', async () => {
    const path = file(`${HEAD}spec:\n  containerd:\n    cgroupDriver: "${'z'.repeat(10_000)}"\n`);
    const [first] = await issues([path]);
    expect(first!.message).toBe(`"${'z'.repeat(77)}..." is not one of "systemd", "cgroupfs"`);
  });

  it('never quotes a literal that breaks a secret field\'s own pattern', () => {
    const schema = secret({ pattern: /^[a-z]{6}\.[a-z]{16}$/, patternHint: 'a bootstrap token' });
    const { issues: found } = parseWith(schema, 'WRONG-token-Value-123');
    expect(found).toHaveLength(1);
    expect(JSON.stringify(found)).not.toContain('WRONG-token');
  });

  it('redacts literals and shows references as written in the effective configuration', async () => {
    const path = file(`${HEAD}spec:\n  domainJoin:\n    domain: corp.example\n    credentials: { username: admin, password: "hunter2-literal" }\n  report:\n    endpoints:\n      - url: https://collector.example/e\n        bearerToken: { valueFrom: { env: REPORT_TOKEN } }\n`);
    const { config } = await loadConfig(host(), [path]);
    const shown = JSON.stringify(redactConfig(config));
    expect(shown).not.toContain('hunter2');
    expect(shown).toContain('"password":"<redacted>"');
    expect(shown).toContain('"bearerToken":{"valueFrom":{"env":"REPORT_TOKEN"}}');
  });
});
