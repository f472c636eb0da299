// Properties of the MIME multipart reader: what a writer following RFC 2046 puts in comes back out
// byte for byte (any boundary, any body, each transfer encoding, gzip, CRLF or LF, nesting), and
// any other bytes give parts or a MimeError, never a crash, in bounded time.
import fc from 'fast-check';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { MimeError, splitMultipart } from '../../src/config/mime.ts';
import { holds, thrownBy } from '../support/property.ts';

const LIMIT = 1024 * 1024;

interface Part {
  type: string;
  encoding: '7bit' | 'base64' | 'gzip+base64' | 'quoted-printable';
  body: Buffer;
}

function quotedPrintable(bytes: Buffer): string {
  const encoded = [...bytes].map((b) => (b >= 0x21 && b <= 0x7e && b !== 0x3d ? String.fromCharCode(b) : `=${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
  // Soft line breaks every 72 characters, never inside an =XX escape.
  const lines: string[] = [];
  let rest = encoded;
  while (rest.length > 72) {
    let cut = 72;
    const escape = rest.lastIndexOf('=', cut);
    if (escape > cut - 3) cut = escape;
    lines.push(rest.slice(0, cut) + '=');
    rest = rest.slice(cut);
  }
  lines.push(rest);
  return lines.join('\n');
}

function encodedBody(part: Part): string {
  if (part.encoding === '7bit') return part.body.toString('latin1');
  if (part.encoding === 'quoted-printable') return quotedPrintable(part.body) + '\n';
  const bytes = part.encoding === 'gzip+base64' ? gzipSync(part.body) : part.body;
  return (bytes.toString('base64').match(/.{1,76}/g) ?? []).join('\n') + '\n';
}

function writeMultipart(boundary: string, parts: (Part | { boundary: string; parts: Part[] })[], crlf: boolean): string {
  const lines: string[] = [`Content-Type: multipart/mixed; boundary="${boundary}"`, 'MIME-Version: 1.0', ''];
  for (const part of parts) {
    lines.push(`--${boundary}`);
    if ('parts' in part) {
      lines.push(writeMultipart(part.boundary, part.parts, false).replace(/\n$/, ''));
      continue;
    }
    lines.push(`Content-Type: ${part.type}`);
    if (part.encoding !== '7bit') lines.push(`Content-Transfer-Encoding: ${part.encoding === 'gzip+base64' ? 'base64' : part.encoding}`);
    lines.push('', encodedBody(part).replace(/\n$/, ''));
  }
  lines.push(`--${boundary}--`, '');
  const text = lines.join('\n');
  return crlf ? text.replace(/\n/g, '\r\n') : text;
}

// RFC 2046 bchars without the space.
const boundary = fc.stringMatching(/^[A-Za-z0-9'()+_,./:=?-]{1,40}$/);
const contentType = fc.constantFrom('application/machineadm.cluster.x-k8s.io', 'text/application/machineadm.cluster.x-k8s.io', 'text/cloud-config', 'text/x-shellscript', 'application/octet-stream');
// A gzip magic number at the start of a body makes it gzip, as in cloud-init.
const binary = fc.uint8Array({ maxLength: 600 }).map((b) => Buffer.from(b)).filter((b) => !(b[0] === 0x1f && b[1] === 0x8b));
// 7bit text: lines without CR, ending with one line break, no blank lines at the end (they belong to the delimiter).
const textBody = fc
  .array(fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 60 }), { minLength: 1, maxLength: 8 })
  .map((lines) => lines.join('\n').replace(/\n+$/, '') + '\n')
  .filter((t) => t.trim() !== '' && !/^--/m.test(t))
  .map((t) => Buffer.from(t, 'latin1'));
const part: fc.Arbitrary<Part> = fc.oneof(
  fc.record({ type: contentType, encoding: fc.constant('7bit' as const), body: textBody }),
  fc.record({ type: contentType, encoding: fc.constantFrom('base64' as const, 'gzip+base64' as const, 'quoted-printable' as const), body: binary }),
);

describe('MIME multipart user data', () => {
  it('gives back each part as written: its content type and its bytes', async () => {
    const document = fc.record({
      boundary,
      crlf: fc.boolean(),
      parts: fc.array(fc.oneof({ weight: 4, arbitrary: part }, { weight: 1, arbitrary: fc.record({ boundary, parts: fc.array(part, { minLength: 1, maxLength: 3 }) }) }), { minLength: 1, maxLength: 5 }),
    }).filter((d) => d.parts.every((p) => !('parts' in p) || p.boundary !== d.boundary && !p.boundary.startsWith(d.boundary) && !d.boundary.startsWith(p.boundary)));
    await holds('mime: written parts read back', document, (d) => {
      const read = splitMultipart(Buffer.from(writeMultipart(d.boundary, d.parts, d.crlf), 'latin1'), LIMIT);
      const expected = d.parts.flatMap((p) => ('parts' in p ? p.parts : [p]));
      expect(read.map((p) => p.contentType)).toEqual(expected.map((p) => p.type));
      read.forEach((p, i) => expect(p.body.equals(expected[i]!.body), `part ${i + 1} (${expected[i]!.encoding})`).toBe(true));
    }, 300);
  });

  it('reads a gzip part sent as quoted-printable (no line break is added to the decoded bytes)', () => {
    const config = Buffer.from('apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\n');
    const [read] = splitMultipart(Buffer.from(writeMultipart('b', [{ type: 'application/machineadm.cluster.x-k8s.io', encoding: 'quoted-printable', body: gzipSync(config) }], false), 'latin1'), LIMIT);
    expect(read?.body.toString()).toBe(config.toString());
  });

  it('gives parts or a MimeError for any bytes after a multipart header', async () => {
    const input = fc.tuple(fc.oneof(fc.constant('b'), boundary), fc.oneof(fc.uint8Array({ maxLength: 2000 }).map((b) => Buffer.from(b).toString('latin1')), fc.array(fc.constantFrom('--b\n', '--b--\n', 'Content-Type: multipart/mixed; boundary=b\n', 'Content-Transfer-Encoding: base64\n', 'Content-Transfer-Encoding: quoted-printable\n', 'Content-Encoding: gzip\n', '\n', '\r\n', 'H4sI\n', '=0A=\n', 'x: y\n', ' folded\n', '====\n'), { maxLength: 60 }).map((t) => t.join(''))));
    await holds('mime: any bytes', input, ([b, rest]) => thrownBy(() => splitMultipart(Buffer.from(`Content-Type: multipart/mixed; boundary=${b}\n\n${rest}`, 'latin1'), LIMIT), [MimeError]), 400);
  });
});
