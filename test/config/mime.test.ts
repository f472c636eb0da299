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
});
