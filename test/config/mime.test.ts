import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { MACHINECONFIG_CONTENT_TYPE, MimeError, isMultipart, splitMultipart } from '../../src/config/mime.ts';
import { multipart } from './helpers/servers.ts';

const config = 'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  kernelModules: [overlay]\n';
const script = '#!/bin/sh\necho hello\n';
const cloudConfig = '#cloud-config\npackages: [curl]\n';
const limit = 1024 * 1024;

function ours(text: string | Buffer) {
  return splitMultipart(Buffer.from(text), limit).filter((p) => p.contentType === MACHINECONFIG_CONTENT_TYPE);
}

describe('MIME multipart user data', () => {
  const mixed = [
    { type: 'text/x-shellscript', body: script },
    { type: 'text/cloud-config', body: cloudConfig },
    { type: MACHINECONFIG_CONTENT_TYPE, body: config },
  ];

  it.each([
    ['well formed', {}],
    ['with CRLF line ends', { crlf: true }],
    ['without the blank line after the part headers', { noBlankLine: true }],
    ['without the final boundary', { noFinalBoundary: true }],
    ['with all three mistakes at once', { crlf: true, noBlankLine: true, noFinalBoundary: true }],
  ])('takes the MachineConfig part out of user data %s', (_name, options) => {
    const text = multipart(mixed, options);
    expect(isMultipart(Buffer.from(text))).toBe(true);
    const parts = splitMultipart(Buffer.from(text), limit);
    expect(parts.map((p) => p.contentType)).toEqual(['text/x-shellscript', 'text/cloud-config', MACHINECONFIG_CONTENT_TYPE]);
    expect(parts[2]!.body.toString().replace(/\r\n/g, '\n')).toBe(config);
    expect(parts[0]!.body.toString().replace(/\r\n/g, '\n')).toBe(script);
  });

  it('says on which line of the user data a plain part starts', () => {
    const parts = ours(multipart(mixed));
    const text = multipart(mixed).split('\n');
    expect(text[parts[0]!.firstLine! - 1]).toBe('apiVersion: machineadm.cluster.x-k8s.io/v1alpha1');
  });

  it('decodes a base64 part', () => {
    expect(ours(multipart([{ type: MACHINECONFIG_CONTENT_TYPE, body: config, encoding: 'base64' }]))[0]!.body.toString()).toBe(config);
  });

  it('decompresses a gzip part sent as base64', () => {
    const text = multipart([{ type: MACHINECONFIG_CONTENT_TYPE, body: gzipSync(config), encoding: 'base64' }]);
    expect(ours(text)[0]!.body.toString()).toBe(config);
  });

  it('refuses a gzip part that expands beyond the limit', () => {
    const text = multipart([{ type: MACHINECONFIG_CONTENT_TYPE, body: gzipSync(Buffer.alloc(4 * limit)), encoding: 'base64' }]);
    expect(() => ours(text)).toThrow(/expands beyond the limit/);
  });

  it('reads nested multipart documents', () => {
    const inner = multipart([{ type: MACHINECONFIG_CONTENT_TYPE, body: config }]).replace(/==BOUNDARY==/g, 'inner');
    const innerHeaders = inner.split('\n\n')[0]!;
    const innerBody = inner.slice(innerHeaders.length + 2);
    const outer = `Content-Type: multipart/mixed; boundary=outer\n\n--outer\nContent-Type: text/x-shellscript\n\n${script}--outer\n${innerHeaders}\n\n${innerBody}--outer--\n`;
    expect(ours(outer)[0]!.body.toString()).toBe(config);
  });

  it('finds nothing of ours in user data for other tools', () => {
    expect(ours(multipart(mixed.slice(0, 2)))).toEqual([]);
  });

  it('is not fooled by a plain YAML document or a shell script', () => {
    expect(isMultipart(Buffer.from(config))).toBe(false);
    expect(isMultipart(Buffer.from(script))).toBe(false);
  });

  it('refuses multipart without a boundary', () => {
    expect(() => splitMultipart(Buffer.from('Content-Type: multipart/mixed\n\nhello\n'), limit)).toThrow(MimeError);
  });

  it('refuses a base64 part that is not base64', () => {
    const text = multipart([{ type: MACHINECONFIG_CONTENT_TYPE, body: config }]).replace('MIME-Version: 1.0\n\napi', 'Content-Transfer-Encoding: base64\nMIME-Version: 1.0\n\napi');
    expect(() => ours(text)).toThrow(/says base64/);
  });

  // nodeadm tries every NodeConfig part as base64 (line breaks ignored) whatever its headers say;
  // machineadm does so for its own parts that name no transfer encoding.
  it.each([
    ['a MachineConfig', Buffer.from(config)],
    ['a gzip MachineConfig', gzipSync(config)],
  ])('decodes %s sent as base64 without a Content-Transfer-Encoding header', (_, bytes) => {
    const text = multipart([{ type: MACHINECONFIG_CONTENT_TYPE, body: bytes.toString('base64').replace(/.{76}/g, '$&\n') }]);
    expect(text).not.toContain('Content-Transfer-Encoding');
    expect(ours(text)[0]!.body.toString()).toBe(config);
  });

  it('keeps a plain part, and another tool\'s base64-looking part, as sent when no transfer encoding is named', () => {
    const token = 'QUJDRA==\n';
    const parts = splitMultipart(Buffer.from(multipart([{ type: 'text/plain', body: token }, { type: MACHINECONFIG_CONTENT_TYPE, body: config }])), limit);
    expect(parts.map((p) => p.body.toString())).toEqual([token, config]);
  });

  // cloud-init's parser walks into a message/rfc822 part and hands its parts to the handlers.
  it.each([
    ['one part', `MIME-Version: 1.0\nContent-Type: ${MACHINECONFIG_CONTENT_TYPE}\n\n${config}`],
    ['a multipart', multipart([{ type: 'text/x-shellscript', body: script }, { type: MACHINECONFIG_CONTENT_TYPE, body: config }]).replace(/==BOUNDARY==/g, 'inner')],
  ])('reads a message/rfc822 part holding %s', (_, message) => {
    const outer = `MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=outer\n\n--outer\nContent-Type: text/x-shellscript\n\n${script}--outer\nContent-Type: message/rfc822\n\n${message}--outer--\n`;
    const found = ours(outer);
    expect(found).toHaveLength(1);
    expect(found[0]!.body.toString()).toBe(config);
  });

  it.each([
    ['message/partial', 'Content-Type: message/partial; id="x"; number=1; total=2', /part 1 \(message\/partial\) is a piece of or a pointer to a message, which machineadm cannot read/],
    ['message/external-body', 'Content-Type: message/external-body; access-type=URL; URL="https://x"', /part 1 \(message\/external-body\) is a piece of/],
    ['a base64 message/rfc822', 'Content-Type: message/rfc822\nContent-Transfer-Encoding: base64', /part 1 \(message\/rfc822\) has Content-Transfer-Encoding base64; an embedded message must be sent as it is/],
  ])('refuses %s with the part named, never passing over it', (_, headers, message) => {
    const outer = `Content-Type: multipart/mixed; boundary=outer\n\n--outer\n${headers}\n\nContent-Type: ${MACHINECONFIG_CONTENT_TYPE}\n\n${config}--outer--\n`;
    expect(() => splitMultipart(Buffer.from(outer), limit)).toThrow(message);
  });
});
