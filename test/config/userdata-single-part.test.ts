// User data that is one MIME part with no multipart around it: machineadm's own Content-Type
// header, a blank line, the MachineConfig. cloud-init reads such a message (with MIME-Version) as
// that one part; machineadm reads the part's body too, never the headers as YAML. Exact bytes,
// through the AWS metadata service as a machine reads them at boot.
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { NoMachineConfigError } from '../../src/config/load.ts';
import { ConfigError } from '../../src/errors.ts';
import { userDataLoader } from './helpers/user-data.ts';

const YAML = 'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  kernelModules: [overlay]\n';
const bytes = (...parts: (string | Buffer)[]) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : p)));

const load = userDataLoader();

describe('user data that is one MIME part without a multipart wrapper', () => {
  it.each([
    ['the cloud-init type, LF', bytes('MIME-Version: 1.0\nContent-Type: text/x-machineadm-config\n\n', YAML)],
    ['the cloud-init type, CRLF', bytes('MIME-Version: 1.0\r\nContent-Type: text/x-machineadm-config\r\n\r\n', YAML.replace(/\n/g, '\r\n'))],
    ['the API type with a charset parameter', bytes('MIME-Version: 1.0\nContent-Type: application/machineadm.cluster.x-k8s.io; charset="utf-8"\n\n', YAML)],
    ['the make-mime form', bytes('MIME-Version: 1.0\nContent-Type: text/application/machineadm.cluster.x-k8s.io\n\n', YAML)],
    ['Subject: before Content-Type', bytes('Subject: node config\nMIME-Version: 1.0\nContent-Type: text/x-machineadm-config\n\n', YAML)],
    ['a raw gzip body', bytes('MIME-Version: 1.0\nContent-Type: text/x-machineadm-config\n\n', gzipSync(YAML))],
    ['a gzip body with Content-Encoding and CRLF headers', bytes('MIME-Version: 1.0\r\nContent-Type: text/x-machineadm-config\r\nContent-Encoding: gzip\r\n\r\n', gzipSync(YAML))],
    ['a base64 transfer encoding', bytes('MIME-Version: 1.0\nContent-Type: text/x-machineadm-config\nContent-Transfer-Encoding: base64\n\n', Buffer.from(YAML).toString('base64').replace(/(.{76})/g, '$1\n'), '\n')],
    ['base64 of a gzip body, CRLF', bytes('MIME-Version: 1.0\r\nContent-Type: text/x-machineadm-config\r\nContent-Transfer-Encoding: base64\r\n\r\n', gzipSync(YAML).toString('base64'), '\r\n')],
    ['the whole part gzip-compressed', gzipSync(bytes('MIME-Version: 1.0\nContent-Type: text/x-machineadm-config\n\n', YAML))],
  ])('reads the MachineConfig of %s, with no warning', async (_name, userData) => {
    const loaded = await load(userData);
    expect(loaded.config.spec.kernelModules).toEqual(['overlay']);
    expect(loaded.warnings).toBeUndefined();
  });

  it('names the line of a mistake in the part by its line in the user data', async () => {
    const error = await load(bytes('MIME-Version: 1.0\nContent-Type: text/x-machineadm-config\n\n', YAML, '  sysctlz: {}\n')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues).toMatchObject([{ path: 'spec.sysctlz', line: 8, message: 'unknown field' }]);
  });

  it('reads it without MIME-Version too, and warns that cloud-init reads such user data as plain text', async () => {
    const loaded = await load(bytes('Content-Type: text/x-machineadm-config\n\n', YAML));
    expect(loaded.config.spec.kernelModules).toEqual(['overlay']);
    expect(loaded.warnings).toEqual([expect.stringMatching(/one MIME part without a MIME-Version header; .*put MIME-Version: 1\.0 before Content-Type/)]);
  });

  it.each([
    ['with', 'MIME-Version: 1.0\n', undefined],
    ['without', '', [expect.stringMatching(/multipart user data without a MIME-Version header; .*put MIME-Version: 1\.0 among the top headers/)]],
  ])('reads multipart user data %s MIME-Version, warning only without it', async (_name, version, warnings) => {
    const loaded = await load(bytes(version, 'Content-Type: multipart/mixed; boundary="B"\n\n--B\nContent-Type: text/x-machineadm-config\n\n', YAML, '--B--\n'));
    expect(loaded.config.spec.kernelModules).toEqual(['overlay']);
    expect(loaded.warnings).toEqual(warnings);
  });

  it('leaves a single part of another type (a shell script) to its owner, even when it mentions a MachineConfig', async () => {
    const script = bytes('MIME-Version: 1.0\nContent-Type: text/x-shellscript\n\n#!/bin/sh\ncat > /etc/machineadm/config.yaml <<EOF\n', YAML, 'EOF\n');
    expect(await load(script).catch((e: unknown) => e)).toBeInstanceOf(NoMachineConfigError);
  });

  it.each([
    ['a type that means machineadm but is not one it reads', bytes('MIME-Version: 1.0\nContent-Type: application/x-machineadm\n\n', YAML), /has Content-Type application\/x-machineadm, which machineadm does not read/],
    ['a base64 part that holds other characters', bytes('MIME-Version: 1.0\nContent-Type: text/x-machineadm-config\nContent-Transfer-Encoding: base64\n\n', YAML), /part 1 says base64 but holds other characters/],
    ['an empty part', bytes('MIME-Version: 1.0\nContent-Type: text/x-machineadm-config\n\n'), /part is empty/],
  ])('refuses %s, naming the part and why', async (_name, userData, message) => {
    const error = await load(userData).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(2);
    expect((error as ConfigError).issues.map((i) => i.message).join('\n')).toMatch(message);
  });
});
