// Properties of the names that become paths on the machine: a sysctl key the rules accept stays
// under /proc/sys and reads back from the sysctl.d file as written; a spec.files path the rules
// accept stays under --root, whatever characters either holds.
import fc from 'fast-check';
import { posix } from 'node:path';
import { describe, expect, it } from 'vitest';
import { filePathProblem } from '../../src/config/schema/file-content.ts';
import { procPath, renderSysctlFile, sysctlKeyProblem } from '../../src/config/schema/sysctl-key.ts';
import { RootedFileSystem } from '../../src/host/index.ts';
import { holds } from '../support/property.ts';

// Path-like text: the pieces of traversal and the characters that end or split names.
const pathish = fc.array(fc.constantFrom('.', '..', '/', 'a', 'net', 'ipv4', '\0', ' ', '\t', '\n', '%2e', '\\', ':', '@', '-', '_', '+', 'é', '~'), { maxLength: 12 }).map((p) => p.join(''));
const anyPath = fc.oneof(pathish, fc.string({ unit: 'binary', maxLength: 30 }));

describe('names that become paths on the machine', () => {
  it('keep an accepted sysctl key under /proc/sys, one file per key', async () => {
    await holds('sysctl: accepted keys stay under /proc/sys', anyPath, (key) => {
      if (sysctlKeyProblem(key) !== undefined) return;
      const path = procPath(key);
      expect(posix.normalize(path)).toBe(path);
      expect(path.startsWith('/proc/sys/')).toBe(true);
      expect(path).not.toMatch(/[\0\s]/);
    }, 1000);
  });

  it('write accepted sysctls to the sysctl.d file so that each line reads back as its key and value', async () => {
    const key = fc.array(fc.stringMatching(/^[A-Za-z0-9_:@+-]{1,8}$/), { minLength: 2, maxLength: 4 }).map((p) => p.join('.'));
    const value = fc.string({ minLength: 1, maxLength: 30 }).filter((v) => !/[\r\n\0]/.test(v) && v.trim() !== '');
    await holds('sysctl: file round trip', fc.dictionary(key, value, { maxKeys: 6, noNullPrototype: true }), (sysctls) => {
      // systemd-sysctl and procps: "key = value" with white space around both trimmed; "#" and ";" start comments.
      const read = Object.fromEntries(renderSysctlFile(sysctls).split('\n').filter((l) => l.trim() && !/^[#;]/.test(l)).map((l) => [l.slice(0, l.indexOf('=')).trim(), l.slice(l.indexOf('=') + 1).trim()]));
      expect(read).toEqual(Object.fromEntries(Object.entries(sysctls).map(([k, v]) => [k, v.trim()])));
    }, 300);
  });

  it('keep an accepted spec.files path under --root', async () => {
    const root = '/tmp/machineadm-root';
    const fs = new RootedFileSystem(root);
    await holds('files: accepted paths stay under the root', anyPath.map((p) => (p.startsWith('/') ? p : `/${p}`)), (path) => {
      if (filePathProblem(path) !== undefined) return;
      // Accepted at validation means accepted by the files step too: no refusal after other steps ran.
      const real = fs.mapPath(path);
      expect(posix.normalize(real)).toBe(real);
      expect(real.startsWith(`${root}/`)).toBe(true);
    }, 1000);
  });
});
