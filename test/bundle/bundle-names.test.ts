// The names of the files in a bundle come from the paths of what they were downloaded from, and
// never carry a URL's query or password: those names are written to SHA256SUMS and config.yaml,
// printed while bundling, and named by every run on the target.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHost } from '../../src/host/index.ts';
import { loadConfig } from '../../src/config/load.ts';
import { buildBundle } from '../../src/bundle/build.ts';
import { scratchDir } from '../support/tmp.ts';
import { startHttp, type RunningServer } from '../config/helpers/servers.ts';

const BODY = Buffer.from('an image archive\n');
const SHA = createHash('sha256').update(BODY).digest('hex');

describe('the name of a bundled image archive', () => {
  let server: RunningServer;
  beforeAll(async () => {
    // Every path is the same small file; a .sha256 beside it holds its sum (the release layout).
    server = await startHttp((req, res) => {
      res.end((req.url ?? '').split('?')[0]!.endsWith('.sha256') ? `${SHA}\n` : BODY);
    });
  });
  afterAll(async () => server?.close());

  it('is the file name of the URL\'s path, without its query (a presigned signature) or its password', async () => {
    const work = scratchDir();
    const presigned = `${server.url}/images/pause.oci.tar?X-Amz-Credential=AKIAEXAMPLE&X-Amz-Signature=f00dsecret`;
    const withPassword = server.url.replace('://', '://user:pa55word@');
    writeFileSync(
      join(work, 'node.yaml'),
      [
        'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1',
        'kind: MachineConfig',
        'spec:',
        '  kubernetes:',
        '    version: v1.31.2',
        '    controlPlaneEndpoint: 10.0.0.10:6443',
        '    token: abcdef.0123456789abcdef',
        `    caCertHashes: [ "sha256:${'ab'.repeat(32)}" ]`,
        '    install:',
        `      baseUrl: ${server.url}/release`,
        '      images:',
        `        - { url: "${presigned}", sha256: ${SHA} }`,
        `        - { url: "${withPassword}", sha256: ${SHA} }`,
        '',
      ].join('\n'),
    );
    const host = createHost({ root: scratchDir() });
    const { config } = await loadConfig(host, [join(work, 'node.yaml')]);
    const dir = join(work, 'bundle');
    const result = await buildBundle(host, { config, destination: dir, installPlatforms: [{ os: 'linux', arch: 'x64' }] });
    const images = result.files.map((f) => f.path).filter((p) => p.startsWith('install/images/'));
    expect(images).toEqual(['install/images/0-pause.oci.tar', 'install/images/1-file']);
    for (const written of [readFileSync(join(dir, 'SHA256SUMS'), 'utf8'), readFileSync(join(dir, 'config.yaml'), 'utf8')]) {
      expect(written).not.toMatch(/f00dsecret|AKIAEXAMPLE|pa55word/);
    }
  });
});
