// Properties of displayUrl, the one way a URL reaches a message: no password of the userinfo and no
// query value survives, in any spelling a URL parser accepts (encoded, with tabs or line breaks,
// with "@" or "?" inside, in a fragment, upper-case schemes), and it never throws.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { displayUrl } from '../../src/host/http.ts';
import { redactUrlsIn } from '../../src/redaction.ts';
import { machineConfigSchema } from '../../src/config/schema/index.ts';
import { formatPath, parseWith } from '../../src/config/schema/dsl.ts';
import { holds } from '../support/property.ts';

// Secrets carry a marker that no generated host or path can hold, so a hit is a leak, not a coincidence.
const MARK = 'Zq';
const secretText = fc.string({ unit: fc.constantFrom(...'ABCDEFGHJKLMNPRSTUVWXY0123456789!$&\'()*+,;=~-._@:/?#[]%\t\n\\ '.split('')), minLength: 3, maxLength: 16 }).map((s) => MARK + s);
const lower = fc.stringMatching(/^[a-y0-9-]{1,10}$/);
const url = fc.record({
  scheme: fc.constantFrom('https', 'http', 'HTTPS', 'Http', 'ftp', 's3', 'imds'),
  user: fc.option(lower, { nil: undefined }),
  password: secretText,
  host: fc.array(lower, { minLength: 1, maxLength: 3 }).map((p) => p.join('.')),
  port: fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
  path: fc.array(lower, { maxLength: 3 }).map((p) => p.map((s) => `/${s}`).join('')),
  query: fc.array(fc.tuple(lower, secretText), { maxLength: 3 }),
  fragment: fc.option(secretText, { nil: undefined }),
  spelling: fc.constantFrom('raw', 'encoded', 'tab'),
});

function spell(text: string, how: 'raw' | 'encoded' | 'tab'): string {
  if (how === 'encoded') return encodeURIComponent(text);
  // URL parsers drop tabs and line breaks anywhere: a secret split by them is still the secret.
  if (how === 'tab') return text.slice(0, 2) + '\t' + text.slice(2);
  return text;
}

function forms(secret: string): string[] {
  return [secret, encodeURIComponent(secret), secret.replace(/[\t\n]/g, ''), encodeURIComponent(secret.replace(/[\t\n]/g, ''))];
}

describe('displayUrl', () => {
  it('shows no password and no query value of any URL', async () => {
    await holds('displayUrl: no secret survives', url, (u) => {
      const text = `${u.scheme}://${u.user ?? ''}:${spell(u.password, u.spelling)}@${u.host}${u.port ? `:${u.port}` : ''}${u.path}` +
        (u.query.length ? '?' + u.query.map(([k, v]) => `${k}=${spell(v, u.spelling)}`).join('&') : '') +
        (u.fragment !== undefined ? `#${u.fragment}` : '');
      const shown = displayUrl(text);
      expect(shown).not.toContain(MARK);
      for (const secret of [u.password, ...u.query.map(([, v]) => v)]) for (const form of forms(secret)) expect(shown).not.toContain(form);
    }, 500);
  });

  it.each([
    ['file:///etc/machineadm/config.yaml', 'file:///etc/machineadm/config.yaml'],
    ['file:///srv/release/kubeadm?x=1', 'file:///srv/release/kubeadm?x=<redacted>'],
    ['imds://user-data', 'imds://user-data'],
    ['http://proxy:3128', 'http://proxy:3128'],
  ])('shows %s as %s, a URL that reads back the same (a file: URL keeps its //)', (text, shown) => {
    expect(displayUrl(text)).toBe(shown);
  });

  it('never throws, whatever the text', async () => {
    await holds('displayUrl: any text', fc.oneof(fc.string({ unit: 'binary', maxLength: 200 }), fc.webUrl({ withQueryParameters: true, withFragments: true, validSchemes: ['http', 'https'] })), (text) => {
      expect(typeof displayUrl(text)).toBe('string');
    }, 500);
  });
});

// URLs that look like URLs but that no WHATWG parser reads: a port above 65535, a space, a
// character not allowed in a host, a line break. No parser can say where their password ends.
const breakage = fc.constantFrom(
  (host: string) => `${host}:${70000 + 1}`,
  (host: string) => `${host}:999999`,
  (host: string) => `${host.slice(0, 1)} ${host.slice(1)}`,
  (host: string) => `${host}<`,
  (host: string) => `${host}%zz`,
  (host: string) => `${host}\r\n`,
);
const unparsable = fc.record({ scheme: fc.constantFrom('https', 'http'), user: lower, password: secretText, host: fc.array(lower, { minLength: 1, maxLength: 3 }).map((p) => p.join('.')), query: secretText, broken: breakage }).map(
  (u) => ({ text: `${u.scheme}://${u.user}:${u.password}@${u.broken(u.host)}/x?sig=${u.query}`, secrets: [u.password, u.query] }),
).filter((u) => !URL.canParse(u.text));

describe('a URL that does not parse', () => {
  it('is shown without its password or query, alone or in text (where white space ends it)', async () => {
    await holds('redactUrlsIn: unparsable URLs', unparsable, (u) => {
      expect(displayUrl(u.text)).not.toContain(MARK);
      // In text a URL ends where white space, a quote or a bracket starts, as a reader sees it.
      if (!/[\s"'<>`]/.test(u.text)) expect(redactUrlsIn(`fetching ${u.text} failed`)).not.toContain(MARK);
    }, 300);
  });

  it('is refused by validation in every network URL field, and no message quotes its password or query', async () => {
    const fields: [string, (url: string) => Record<string, unknown>][] = [
      ['spec.files[0].source.url', (url) => ({ files: [{ path: '/opt/x', source: { url, sha256: 'a'.repeat(64) } }] })],
      ['spec.containerd.registries["docker.io"].mirrors[0].url', (url) => ({ containerd: { registries: { 'docker.io': { mirrors: [{ url }] } } } })],
      ['spec.containerd.proxy.httpsProxy', (url) => ({ containerd: { proxy: { httpsProxy: url } } })],
      ['spec.report.endpoints[0].url', (url) => ({ report: { endpoints: [{ url }] } })],
    ];
    await holds('validation: unparsable URLs', fc.tuple(unparsable, fc.constantFrom(...fields)), ([u, [path, spec]]) => {
      const { issues } = parseWith(machineConfigSchema, { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: spec(u.text) });
      const issue = issues.find((i) => formatPath(i.path) === path);
      expect(issue, `${path} accepted ${JSON.stringify(u.text)}`).toBeDefined();
      expect(JSON.stringify(issues)).not.toContain(MARK);
    }, 300);
  });
});
