// User data as nodeadm's own tests (awslabs/amazon-eks-ami, nodeadm/internal/configprovider) and
// its users' bug reports write it, with machineadm's part in place of nodeadm's NodeConfig: read
// through the AWS metadata service as a machine reads it at boot.
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { NoMachineConfigError } from '../../src/config/load.ts';
import { MACHINECONFIG_CONTENT_TYPE } from '../../src/config/mime.ts';
import { ConfigError } from '../../src/errors.ts';
import { userDataLoader } from './helpers/user-data.ts';

const lines = (...l: string[]) => Buffer.from(l.join('\n'));
const crlf = (b: Buffer) => Buffer.from(b.toString('latin1').replace(/\n/g, '\r\n'), 'latin1');
const config = (modules: string) => ['---', 'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1', 'kind: MachineConfig', 'spec:', `  kernelModules: [${modules}]`];
const gzipped = gzipSync(lines(...config('overlay'), ''));
const top = ['MIME-Version: 1.0', 'Content-Type: multipart/mixed; boundary="BOUNDARY"', ''];
const oneConfig = lines(...top, '--BOUNDARY', `Content-Type: ${MACHINECONFIG_CONTENT_TYPE}`, '', ...config('overlay'), '', '--BOUNDARY--');
const rawGzipPart = Buffer.concat([lines(...top, '--BOUNDARY', `Content-Type: ${MACHINECONFIG_CONTENT_TYPE}`, '', ''), gzipped, lines('', '--BOUNDARY--')]);

const load = userDataLoader();

describe('user data as the peers write it', () => {
  it.each([
    ['two MachineConfig parts, merged in order', lines(...top, '--BOUNDARY', `Content-Type: ${MACHINECONFIG_CONTENT_TYPE}`, '', ...config('br_netfilter'), '', '--BOUNDARY', `Content-Type: ${MACHINECONFIG_CONTENT_TYPE}`, '', ...config('overlay'), '', '--BOUNDARY--'), ['overlay']],
    ['a gzip-compressed MachineConfig, not multipart', gzipped, ['overlay']],
    ['gzip-compressed multipart', gzipSync(oneConfig), ['overlay']],
    ['a gzip part sent as raw bytes, without a transfer encoding', rawGzipPart, ['overlay']],
    ['a gzip part sent as raw bytes in CRLF multipart', Buffer.concat([crlf(lines(...top, '--BOUNDARY', `Content-Type: ${MACHINECONFIG_CONTENT_TYPE}`, '', '')), gzipped, crlf(lines('', '--BOUNDARY--'))]), ['overlay']],
    ['base64-wrapped gzip multipart, as a launch template encodes it once too often', Buffer.from(gzipSync(oneConfig).toString('base64')), ['overlay']],
    ['base64-wrapped multipart, wrapped at 76 columns', Buffer.from(oneConfig.toString('base64').replace(/(.{76})/g, '$1\n')), ['overlay']],
    ['a part with Subject: before its Content-Type', lines(...top, '--BOUNDARY', 'Subject: node config', `Content-Type: ${MACHINECONFIG_CONTENT_TYPE}`, '', ...config('overlay'), '--BOUNDARY--'), ['overlay']],
    ['a part with Subject: after its Content-Type', lines(...top, '--BOUNDARY', `Content-Type: ${MACHINECONFIG_CONTENT_TYPE}`, 'Subject: node config', '', ...config('overlay'), '--BOUNDARY--'), ['overlay']],
    ['a top-level Number-Attachments: before Content-Type', lines('Number-Attachments: 1', ...top, '--BOUNDARY', `Content-Type: ${MACHINECONFIG_CONTENT_TYPE}`, '', ...config('overlay'), '--BOUNDARY--'), ['overlay']],
    ['the "//" boundary of the EKS user guide, with a shell script part first', lines('MIME-Version: 1.0', 'Content-Type: multipart/mixed; boundary="//"', '', '--//', 'Content-Type: text/x-shellscript; charset="us-ascii"', '', '#!/bin/bash', 'echo hi', '--//', `Content-Type: ${MACHINECONFIG_CONTENT_TYPE}`, '', ...config('overlay'), '', '--//--', ''), ['overlay']],
  ])('reads %s', async (_name, userData, modules) => {
    const { config: loaded } = await load(userData);
    expect(loaded.spec.kernelModules).toEqual(modules);
  });

  it.each([
    ['a MachineConfig part in a transfer encoding machineadm cannot decode', lines(...top, '--BOUNDARY', `Content-Type: ${MACHINECONFIG_CONTENT_TYPE}`, 'Content-Transfer-Encoding: x-uuencode', '', 'begin 644 c', '--BOUNDARY--'), /part 1 \(application\/machineadm\.cluster\.x-k8s\.io\) has Content-Transfer-Encoding x-uuencode/],
    ['a truncated raw gzip part', Buffer.concat([lines(...top, '--BOUNDARY', `Content-Type: ${MACHINECONFIG_CONTENT_TYPE}`, '', ''), gzipped.subarray(0, 20), lines('', '--BOUNDARY--')]), /part 1 \(application\/machineadm\.cluster\.x-k8s\.io\): gzip content is corrupt/],
  ])('refuses %s, naming the part and why', async (_name, userData, message) => {
    const error = await load(userData).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(2);
    expect((error as ConfigError).issues.map((i) => i.message).join('\n')).toMatch(message);
  });

  it('still does nothing for base64 text that is not machineadm user data', async () => {
    const error = await load(Buffer.from(Buffer.from('#!/bin/sh\necho hello\n').toString('base64'))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoMachineConfigError);
  });
});
