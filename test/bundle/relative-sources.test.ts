// How a bundle's configuration names its files: a relative spec.files[].source.url is a file beside
// the configuration file that names it, and nothing else can be relative.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createHost } from '../../src/host/index.ts';
import { loadConfig } from '../../src/config/load.ts';
import { ConfigError, ExitCode, UsageError } from '../../src/errors.ts';
import { buildBundle } from '../../src/bundle/build.ts';
import { scratchDir } from '../support/tmp.ts';

const SHA = 'a'.repeat(64);
const document = (url: string, extra = '') =>
  `apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  files:\n    - { path: /etc/x, source: { url: "${url}", sha256: ${SHA} } }\n${extra}`;

describe('a relative spec.files[].source.url', () => {
  it.each([
    ['files/a.bin', 'files/a.bin'],
    ['../shared/a.bin', '../shared/a.bin'],
    ['./a b.bin', 'a b.bin'],
  ])('%s names the file at %s beside the configuration file', async (given, beside) => {
    const dir = join(scratchDir(), 'bundle');
    mkdirSync(dir);
    writeFileSync(join(dir, 'config.yaml'), document(given));
    const { config } = await loadConfig(createHost({ root: scratchDir() }), [join(dir, 'config.yaml')]);
    expect(config.spec.files?.[0]?.source?.url).toBe(pathToFileURL(join(dir, beside)).href);
  });

  it('is a configuration error from standard input, which is no file to be relative to', async () => {
    const error = await loadConfig(createHost({ root: scratchDir() }), ['-'], { readStdin: async () => Buffer.from(document('files/a.bin')) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(ExitCode.usage);
    expect((error as ConfigError).issues.map((i) => i.path)).toEqual(['spec.files[0].source.url']);
  });

  it.each(['/etc/a.bin', 'ftp://host/a.bin', 'C:\\\\a.bin'])('is not %s, which the schema refuses', async (url) => {
    const dir = scratchDir();
    writeFileSync(join(dir, 'config.yaml'), document(url));
    const error = await loadConfig(createHost({ root: scratchDir() }), [join(dir, 'config.yaml')]).catch((e: unknown) => e);
    expect((error as ConfigError).issues?.map((i) => i.path)).toEqual(['spec.files[0].source.url']);
  });
});

describe('buildBundle refuses', () => {
  const windows = `  windows:\n    hostAgents: [ { name: csi-proxy, source: { url: "https://x.example/csi-proxy.exe", sha256: ${SHA} }, installPath: 'C:\\\\k\\\\csi-proxy.exe' } ]\n`;
  it.each([
    ['a directory that is not empty', document('https://x.example/a'), true, /is not empty/],
    ['Windows host agents, which it cannot carry yet', document('https://x.example/a', windows), false, /spec\.windows\.hostAgents\[0\]\.source/],
  ])('%s, before downloading anything', async (_, text, nonEmpty, message) => {
    const dir = join(scratchDir(), 'out');
    const host = createHost({ root: scratchDir() });
    if (nonEmpty) {
      mkdirSync(dir);
      writeFileSync(join(dir, 'left-over'), 'x');
    }
    const source = join(scratchDir(), 'node.yaml');
    writeFileSync(source, text);
    const { config } = await loadConfig(host, [source]);
    const error = await buildBundle(host, { config, destination: dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toMatch(message);
  });
});
