// Properties of reading a MachineConfig from outside bytes (YAML, JSON, MIME user data, anything):
// every outcome is a configuration or one of machineadm's own errors, in bounded time, and a
// valid configuration written as YAML or JSON reads back as the same values.
import fc from 'fast-check';
import { dump } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { DocumentError, parseDocument } from '../../src/config/document.ts';
import { ConfigError } from '../../src/errors.ts';
import { createHost } from '../../src/host/index.ts';
import { scratchDir } from '../support/tmp.ts';
import { holds, thrownBy } from '../support/property.ts';

const host = createHost({ root: scratchDir('machineadm-load-property-'), offline: true, env: {} });
const HEADER = 'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\n';

function fromStdin(bytes: Uint8Array | string) {
  return loadConfig(host, ['-'], { readStdin: async () => Buffer.from(bytes) });
}

// What a broken configuration is made of: YAML's own punctuation and the words of a real one.
const yamlToken = fc.constantFrom(
  ...'{}[]:,-?&*!|>\'"#%@`\\ \n\t'.split(''),
  '\n  ', '\n- ', ': ', '<<: ', '&a ', '*a', '!!str ', '!!binary ', '!!set ', '!!omap ', '--- ', '...', '"\\u0000"', '"\\ud800"', '0x1F', '1e400', '.nan', '~',
  'apiVersion', 'kind', 'MachineConfig', 'spec', 'files', 'path', 'content', 'sysctls', 'kernelModules', 'containerd', 'registries', 'mirrors', 'url',
  'kubernetes', 'node', 'labels', 'taints', 'kubeletExtraArgs', 'token', 'valueFrom', 'file', 'env', 'extraConfig', 'report', 'endpoints', 'machineadm.cluster.x-k8s.io/v1alpha1',
  'a', '1', 'true', 'null', 'é', '\u2028', '\ufeff',
);
const yamlish = fc.array(yamlToken, { maxLength: 200 }).map((t) => t.join(''));

// Fields where they belong and where they do not, with values of every shape.
const fieldName = fc.constantFrom(
  'files', 'path', 'content', 'encoding', 'mode', 'owner', 'source', 'url', 'sha256', 'sysctls', 'kernelModules', 'containerd', 'registries', 'mirrors', 'caFile', 'skipVerify',
  'extraConfig', 'proxy', 'httpsProxy', 'noProxy', 'caCertificates', 'kubernetes', 'role', 'bootstrap', 'controlPlaneEndpoint', 'token', 'caCertHashes', 'valueFrom', 'file', 'env',
  'node', 'name', 'labels', 'taints', 'key', 'value', 'effect', 'kubeletExtraArgs', 'kubelet', 'maxPods', 'evictionHard', 'staticPods', 'manifest', 'report', 'endpoints', 'headers',
  'windows', 'security', 'net.ipv4.ip_forward', '__proto__', 'constructor', 'toString', '',
);
const anyValue = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.string(),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fieldName, fc.string()), tie('value'), { maxKeys: 5 }),
  ),
})).value;

const segment = fc.stringMatching(/^[a-z0-9_-]{1,8}$/);
const oneLine = fc.string({ minLength: 1, maxLength: 40 }).filter((s) => !/[\r\n\0]/.test(s) && s.trim() !== '');
const host63 = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?$/);
const hostname = fc.array(host63, { minLength: 1, maxLength: 3 }).map((p) => p.join('.'));
// A URL's host whose last label is a number is an IPv4 address to the URL parser, and a.0 is none.
const urlHost = hostname.filter((h) => !/(^|\.)\d+$/.test(h) || URL.canParse(`http://${h}/`));

const validSpec = fc.record(
  {
    kernelModules: fc.uniqueArray(fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/), { maxLength: 4 }),
    sysctls: fc.dictionary(fc.tuple(fc.stringMatching(/^[a-z]{1,8}$/), fc.array(fc.stringMatching(/^[a-z0-9_]{1,8}$/), { minLength: 1, maxLength: 3 })).map(([a, b]) => [a, ...b].join('.')), oneLine, { maxKeys: 4 }),
    files: fc.uniqueArray(
      fc.record({ path: fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => '/' + s.join('/')), content: fc.string({ maxLength: 200 }), mode: fc.constantFrom('0644', '0600', '0755', '644') }),
      { maxLength: 3, selector: (f) => f.path },
    ),
    containerd: fc.record(
      {
        sandboxImage: fc.string({ minLength: 1, maxLength: 60 }),
        cgroupDriver: fc.constantFrom('systemd' as const, 'cgroupfs' as const),
        registries: fc.dictionary(
          hostname,
          fc.record({ mirrors: fc.uniqueArray(fc.tuple(fc.constantFrom('http', 'https'), urlHost, fc.stringMatching(/^(\/[a-z0-9]{1,6}){0,2}$/)).map(([s, h, p]) => ({ url: `${s}://${h}${p}` })), { maxLength: 3, selector: (m) => m.url }) }, { requiredKeys: [] }),
          { maxKeys: 3 },
        ),
      },
      { requiredKeys: [] },
    ),
    kubernetes: fc.record({
      role: fc.constant('control-plane'),
      bootstrap: fc.constant('init'),
      node: fc.record(
        {
          name: hostname,
          labels: fc.dictionary(fc.tuple(hostname, fc.stringMatching(/^[a-z0-9]([a-z0-9._-]{0,10}[a-z0-9])?$/)).map(([p, n]) => `${p}/${n}`), fc.stringMatching(/^([A-Za-z0-9]([A-Za-z0-9._-]{0,10}[A-Za-z0-9])?)?$/), { maxKeys: 3 }),
          kubeletExtraArgs: fc.dictionary(fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,15}$/).filter((k) => !['node-labels', 'register-with-taints', 'hostname-override'].includes(k)), fc.stringMatching(/^[A-Za-z0-9=,:./_-]{0,20}$/), { maxKeys: 3 }),
        },
        { requiredKeys: [] },
      ),
    }, { requiredKeys: ['role', 'bootstrap'] }),
  },
  { requiredKeys: [] },
);

describe('reading a MachineConfig from outside bytes', () => {
  it.each([
    ['any bytes at all', fc.uint8Array({ maxLength: 2048 })],
    ['any text', fc.string({ unit: 'binary', maxLength: 1024 })],
    ['text made of YAML punctuation and configuration words', yamlish],
    ['a MachineConfig header followed by YAML punctuation and configuration words', yamlish.map((t) => HEADER + t)],
    ['MIME multipart user data with random parts', fc.tuple(fc.stringMatching(/^[A-Za-z0-9=_-]{1,20}$/), fc.array(fc.tuple(fc.constantFrom('application/machineadm.cluster.x-k8s.io', 'text/cloud-config', 'multipart/mixed', 'text/x-shellscript'), fc.constantFrom('', 'base64', 'quoted-printable', '7bit'), yamlish), { maxLength: 4 })).map(
      ([b, parts]) => `Content-Type: multipart/mixed; boundary="${b}"\nMIME-Version: 1.0\n\n` + parts.map(([t, e, body]) => `--${b}\nContent-Type: ${t}\n${e ? `Content-Transfer-Encoding: ${e}\n` : ''}\n${HEADER}${body}\n`).join('') + `--${b}--\n`,
    )],
  ] as const)('gives a configuration or a machineadm error, never a crash, for %s', async (name, inputs) => {
    await holds(`load: ${name}`, inputs as fc.Arbitrary<string | Uint8Array>, async (input) => {
      const error = await thrownBy(() => fromStdin(input));
      if (error instanceof ConfigError) {
        expect(error.issues.length).toBeGreaterThan(0);
        for (const issue of error.issues) expect(typeof issue.message).toBe('string');
      }
    }, 150);
  });

  it('gives a configuration or a configuration error naming stdin for any value under spec', async () => {
    await holds('load: any value under spec', fc.dictionary(fieldName, anyValue, { maxKeys: 6 }), async (spec) => {
      for (const text of [HEADER + dump({ spec }, { noRefs: true }), JSON.stringify({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec })]) {
        const error = await thrownBy(() => fromStdin(text));
        if (error) expect(error).toBeInstanceOf(ConfigError);
        if (error instanceof ConfigError) for (const issue of error.issues) expect(issue.source).toBe('stdin');
      }
    }, 200);
  });

  it('reads a valid configuration back as the same values, written as YAML and as JSON', async () => {
    await holds('load: valid configuration round trip', validSpec, async (spec) => {
      const document = { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec };
      for (const text of [dump(document, { noRefs: true }), JSON.stringify(document, null, 2)]) {
        const { config } = await fromStdin(text);
        expect(config.spec).toMatchObject(spec);
      }
    }, 100);
  });

  it('places every syntax problem on a line of the document', async () => {
    await holds('document: problem lines', yamlish.map((t) => HEADER + t), async (text) => {
      const error = await thrownBy(() => parseDocument(text, 'f.yaml'), [DocumentError]);
      const lines = text.split('\n').length;
      for (const issue of (error as DocumentError | undefined)?.issues ?? []) {
        expect(issue.source).toBe('f.yaml');
        if (issue.line === undefined) continue;
        expect(issue.line).toBeGreaterThanOrEqual(1);
        expect(issue.line).toBeLessThanOrEqual(lines);
      }
    }, 300);
  });

});
