// Properties of displayUrl, the one way a URL reaches a message: no password of the userinfo and no
// query value survives, in any spelling a URL parser accepts (encoded, with tabs or line breaks,
// with "@" or "?" inside, in a fragment, upper-case schemes), and it never throws.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { displayUrl } from '../../src/host/http.ts';
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

  it('never throws, whatever the text', async () => {
    await holds('displayUrl: any text', fc.oneof(fc.string({ unit: 'binary', maxLength: 200 }), fc.webUrl({ withQueryParameters: true, withFragments: true, validSchemes: ['http', 'https'] })), (text) => {
      expect(typeof displayUrl(text)).toBe('string');
    }, 500);
  });
});
