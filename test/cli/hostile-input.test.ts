// Hostile configurations through the command line, against a scratch --root and --state-dir: each
// ends with its exact exit code and a message naming the source and field and what to do, and
// leaves the root, the state directory and anything a symbolic link points at byte for byte as
// they were, also when the trap is on the machine (a symbolic link), which the files step's
// preflight finds before the run writes anything.
import { spawn } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { runCli, type CliRun } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { snapshotTree, type TreeSnapshot } from '../support/tree.ts';

const REPO = join(import.meta.dirname, '../..');
const NODE = join(REPO, 'node_modules/.bin/node');
const HEADER = 'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\n';
const HUNDRED_MB = 100 * 1024 * 1024;
const base = scratchDir('machineadm-hostile-');
let n = 0;

interface Machine {
  dir: string;
  root: string;
  state: string;
  outside: string;
  config: string;
}

/** A scratch machine with files of its own, a state directory from an earlier run and a directory outside the root. */
function machine(): Machine {
  const dir = join(base, `case-${n++}`);
  const m = { dir, root: join(dir, 'root'), state: join(dir, 'state'), outside: join(dir, 'outside'), config: join(dir, 'config.yaml') };
  mkdirSync(join(m.root, 'etc/sysctl.d'), { recursive: true });
  writeFileSync(join(m.root, 'etc/hostname'), 'node-1\n');
  writeFileSync(join(m.root, 'etc/sysctl.d/10-site.conf'), 'net.ipv4.ip_forward = 0\n', { mode: 0o600 });
  mkdirSync(m.state, { recursive: true });
  writeFileSync(join(m.state, 'state.json'), '{"version":1,"steps":{}}\n', { mode: 0o600 });
  mkdirSync(m.outside, { recursive: true });
  writeFileSync(join(m.outside, 'passwd'), 'root:x:0:0::/root:/bin/sh\n');
  return m;
}

function snapshot(m: Machine): Record<'root' | 'state' | 'outside', TreeSnapshot> {
  return { root: snapshotTree(m.root), state: snapshotTree(m.state), outside: snapshotTree(m.outside) };
}

function prepare(m: Machine, source = m.config): Promise<CliRun> {
  return runCli(['prepare', '-c', source, '--root', m.root, '--state-dir', m.state]);
}

const yaml = (text: string) => (m: Machine) => writeFileSync(m.config, HEADER + text);
const bytes = (make: () => Buffer) => (m: Machine) => writeFileSync(m.config, make());
const mime = (parts: string) => `Content-Type: multipart/mixed; boundary="b"\nMIME-Version: 1.0\n\n--b\nContent-Type: application/machineadm.cluster.x-k8s.io\n${parts}\n--b--\n`;
const nestedMime = (levels: number) => {
  let doc = `Content-Type: application/machineadm.cluster.x-k8s.io\n\n${HEADER}`;
  for (let i = 0; i < levels; i++) doc = `Content-Type: multipart/mixed; boundary="b${i}"\n\n--b${i}\n${doc}\n--b${i}--\n`;
  return `MIME-Version: 1.0\n${doc}`;
};
const aliasBomb = 'metadata:\n' + Array.from({ length: 9 }, (_, i) => `  a${i}: &a${i} [${Array(10).fill(i ? `*a${i - 1}` : 'x').join(', ')}]\n`).join('');

// [what, how the machine and configuration are set up, expected stderr lines ($CONFIG is the config path)]
const refusedAtValidation: [string, (m: Machine) => void, string[]][] = [
  ['a file path climbing out of the root with ".."', yaml('spec:\n  files:\n    - { path: /etc/../../outside/passwd, content: x }\n'), ['$CONFIG:5:9: spec.files[0].path: "/etc/../../outside/passwd" contains ".."\n    hint: write the path without ".." segments']],
  ['a file path climbing out with a backslash ".." segment', yaml('spec:\n  sysctls: { net.ipv4.ip_forward: "1" }\n  files:\n    - { path: "/etc/..\\\\..\\\\outside\\\\passwd", content: x }\n'), ['$CONFIG:6:9: spec.files[0].path: "/etc/..\\..\\outside\\passwd" contains ".."\n    hint: write the path without ".." segments']],
  ['a relative file path', yaml('spec:\n  files:\n    - { path: ../outside/passwd, content: x }\n'), ['spec.files[0].path: "../outside/passwd" is not absolute\n    hint: write the full path, e.g. /etc/example.conf']],
  ['a file path with a NUL byte', yaml('spec:\n  files:\n    - { path: "/etc/a\\0/../../x", content: x }\n'), ['$CONFIG:5:9: spec.files[0].path: contains a NUL character']],
  ['a sysctl key climbing out of /proc/sys with slashes', yaml('spec:\n  sysctls: { "net/../../etc": "1" }\n'), ['$CONFIG:4:14: spec.sysctls["net/../../etc"]: "net/../../etc" is not valid\n    hint: use dots, e.g. net.ipv4.ip_forward']],
  ['a sysctl key that is ".."', yaml('spec:\n  sysctls: { "..": "1" }\n'), ['$CONFIG:4:14: spec.sysctls[".."]: ".." is not valid\n    hint: use dots']],
  ['a sysctl key with dots climbing out of /proc/sys', yaml('spec:\n  sysctls: { "net...etc.passwd": "1" }\n'), ['spec.sysctls["net...etc.passwd"]: "net...etc.passwd" is not valid\n    hint: use dots']],
  ['an absolute sysctl path', yaml('spec:\n  sysctls: { /proc/sys/net/ipv4/ip_forward: "1" }\n'), ['$CONFIG:4:14: spec.sysctls["/proc/sys/net/ipv4/ip_forward"]: "/proc/sys/net/ipv4/ip_forward" is not valid\n    hint: use dots']],
  ['a sysctl key with a NUL byte', yaml('spec:\n  sysctls: { "net.ipv4.ip_forward\\0": "1" }\n'), ['spec.sysctls["net.ipv4.ip_forward\\u0000"]: "net.ipv4.ip_forward\\u0000" is not valid\n    hint: use dots']],
  ['a sysctl value with a line break that would add a second setting', yaml('spec:\n  sysctls: { net.ipv4.ip_forward: "1\\nkernel.modprobe = /tmp/x" }\n'), ['spec.sysctls["net.ipv4.ip_forward"]: a sysctl value must be one line\n    hint: remove the line break']],
  ['a node name that is a kubelet flag', yaml('spec:\n  kubernetes: { role: control-plane, bootstrap: init, node: { name: "--kubeconfig=/tmp/x" } }\n'), ['spec.kubernetes.node.name: must be lower-case letters, digits, "-" and ".", starting and ending with a letter or digit (RFC 1123)']],
  ['a label key starting with "-"', yaml('spec:\n  kubernetes: { role: control-plane, bootstrap: init, node: { labels: { "-a": b } } }\n'), ['spec.kubernetes.node.labels["-a"]: name part must be letters, digits, "-", "_" and ".", starting and ending with a letter or digit']],
  ['a label value that is a flag with "="', yaml('spec:\n  kubernetes: { role: control-plane, bootstrap: init, node: { labels: { example.com/a: "--register-with-taints=x=y:NoSchedule" } } }\n'), ['spec.kubernetes.node.labels["example.com/a"]: must be letters, digits, "-", "_" and ".", starting and ending with a letter or digit']],
  ['a taint key starting with "-"', yaml('spec:\n  kubernetes: { role: control-plane, bootstrap: init, node: { taints: [ { key: "--x", effect: NoSchedule } ] } }\n'), ['spec.kubernetes.node.taints[0].key: name part must be letters, digits, "-", "_" and ".", starting and ending with a letter or digit']],
  ['a taint value with "=" and ","', yaml('spec:\n  kubernetes: { role: control-plane, bootstrap: init, node: { taints: [ { key: a, value: "b,c=d", effect: NoSchedule } ] } }\n'), ['spec.kubernetes.node.taints[0].value: must be letters, digits, "-", "_" and ".", starting and ending with a letter or digit']],
  ['a kubelet extra arg named with its dashes', yaml('spec:\n  kubernetes: { role: control-plane, bootstrap: init, node: { kubeletExtraArgs: { "--pod-manifest-path": /tmp/x } } }\n'), ['spec.kubernetes.node.kubeletExtraArgs["--pod-manifest-path"]: "--pod-manifest-path" is not valid\n    hint: a flag name without the leading dashes, e.g. max-pods']],
  ['a kubelet extra arg name holding "="', yaml('spec:\n  kubernetes: { role: control-plane, bootstrap: init, node: { kubeletExtraArgs: { "v=1 --pod-manifest-path": x } } }\n'), ['spec.kubernetes.node.kubeletExtraArgs["v=1 --pod-manifest-path"]: "v=1 --pod-manifest-path" is not valid\n    hint: a flag name without the leading dashes, e.g. max-pods']],
  ['a kubelet extra arg value with a space and a second flag', yaml('spec:\n  kubernetes: { role: control-plane, bootstrap: init, node: { kubeletExtraArgs: { v: "2 --pod-manifest-path=/etc/evil" } } }\n'), ['$CONFIG:4:83: spec.kubernetes.node.kubeletExtraArgs.v: must not contain white space, line breaks or control characters: kubeadm passes kubelet flags on one space-separated line, where they would start another flag\n    hint: give one word; separate list items with commas']],
  ['a kubelet extra arg value with a line break and a second flag', yaml('spec:\n  kubernetes: { role: control-plane, bootstrap: init, node: { kubeletExtraArgs: { v: "2\\n--pod-manifest-path=/etc/evil" } } }\n'), ['spec.kubernetes.node.kubeletExtraArgs.v: must not contain white space, line breaks or control characters']],
  ['a YAML alias bomb', yaml(aliasBomb), ['$CONFIG: YAML aliases expand this document to more than 20000 values (an alias bomb?)\n    hint: write the values out instead of nesting aliases']],
  ['more than a thousand YAML aliases', yaml(`metadata:\n  x: &x 1\n  l: [${Array(1001).fill('*x').join(',')}]\n`), ['more than 1000 YAML aliases (an alias bomb?)\n    hint: write the values out instead of nesting aliases']],
  ['YAML lists nested 10,000 deep', yaml(`spec: ${'['.repeat(10_000)}${']'.repeat(10_000)}\n`), ['$CONFIG:3:70: nested too deeply\n    hint: a configuration is at most a few levels deep']],
  ['YAML maps nested 10,000 deep', yaml(`spec: ${'{a: '.repeat(10_000)}1${'}'.repeat(10_000)}\n`), ['$CONFIG:3:256: nested too deeply\n    hint: a configuration is at most a few levels deep']],
  ['JSON nested 10,000 deep', (m) => writeFileSync(m.config, `{"apiVersion":"machineadm.cluster.x-k8s.io/v1alpha1","kind":"MachineConfig","spec":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`), ['$CONFIG:1:390: nested too deeply']],
  ['a 100 MB document', bytes(() => Buffer.concat([Buffer.from(HEADER + 'spec:\n  kernelModules: [overlay]\n# '), Buffer.alloc(HUNDRED_MB, 0x61)])), ['$CONFIG: larger than the limit of 8 MiB (100 MiB)\n    hint: a configuration is never that large']],
  ['MIME user data whose gzip part expands to 64 MiB', (m) => writeFileSync(m.config, mime(`Content-Transfer-Encoding: base64\n\n${gzipSync(Buffer.alloc(64 << 20, 0x20)).toString('base64')}`)), ['$CONFIG:5: MIME user data: part 1 (application/machineadm.cluster.x-k8s.io): gzip content expands beyond the 8 MiB all sources may hold together (as read, gzip undone)\n    hint: a configuration is a few KiB: give large file contents as source: { url, sha256 }']],
  ['MIME user data with a corrupt gzip part', (m) => writeFileSync(m.config, mime(`Content-Transfer-Encoding: base64\n\n${gzipSync(HEADER).subarray(0, 20).toString('base64')}`)), ['$CONFIG:5: MIME user data: part 1 (application/machineadm.cluster.x-k8s.io): gzip content is corrupt (unexpected end of file)\n    hint: compress the part again with gzip; a truncated download is the usual cause']],
  ['MIME user data with a base64 part that is not base64', (m) => writeFileSync(m.config, mime('Content-Transfer-Encoding: base64\n\napiVersion: x\n')), ['$CONFIG:8: MIME user data: part 1 says base64 but holds other characters\n    hint: encode the part with base64, or drop its Content-Transfer-Encoding header']],
  ['MIME user data nested 8 multiparts deep', (m) => writeFileSync(m.config, nestedMime(8)), ['$CONFIG:20: MIME user data: multipart nested more than 5 levels deep\n    hint: put all parts in one multipart/mixed document, as cloud-init make-mime writes it']],
  ['a NUL byte in the document', yaml('spec:\n  kernelModules: [overlay]\0\n'), ['$CONFIG:4:27: not valid YAML or JSON: null byte is not allowed in input\n    hint: fix the syntax at this line (indentation, quotes, brackets)']],
  ['invalid UTF-8', bytes(() => Buffer.concat([Buffer.from(HEADER + 'spec:\n  kernelModules: [ov'), Buffer.from([0xff, 0xfe]), Buffer.from('erlay]\n')])), ['$CONFIG:4: not valid UTF-8 (byte 95 is 0xff)\n    hint: save the file as UTF-8; a binary or UTF-16 file is not a configuration']],
  ['a UTF-16 document', bytes(() => Buffer.from('\ufeff' + HEADER, 'utf16le')), ['$CONFIG:1: not valid UTF-8 (byte 0 is 0xff)\n    hint: save the file as UTF-8']],
];

// Refusals only the files step can make, in its preflight: the machine itself holds the trap. A link
// leaving the root is a bad target (exit 2); a link planted inside the root is the machine's state
// (exit 1). Either way nothing is written, the run's own records included.
const refusedByTheFilesStep: [string, number, (m: Machine) => void, string[]][] = [
  [
    'a file whose directory in the root is a symbolic link to outside it',
    2,
    (m) => {
      symlinkSync(m.outside, join(m.root, 'usr'));
      writeFileSync(m.config, `${HEADER}spec:\n  files:\n    - { path: /usr/passwd, content: "root::0:0::/:/bin/sh" }\n`);
    },
    ['error: step prepare/files failed: spec.files[0].path: path "/usr/passwd" resolves through a symbolic link to $OUTSIDE/passwd, outside the root $ROOT\nhint: remove the link or choose a path inside the root\n'],
  ],
  [
    'a file that is a symbolic link planted at the target, pointing outside the root',
    2,
    (m) => {
      symlinkSync(join(m.outside, 'passwd'), join(m.root, 'etc/motd'));
      writeFileSync(m.config, `${HEADER}spec:\n  files:\n    - { path: /etc/hostname, content: "node-2" }\n    - { path: /etc/motd, content: "root::0:0::/:/bin/sh" }\n`);
    },
    ['error: step prepare/files failed: spec.files[1].path: path "/etc/motd" resolves through a symbolic link to $OUTSIDE/passwd, outside the root $ROOT\nhint: remove the link or choose a path inside the root\n'],
  ],
  [
    'a file that is a symbolic link planted at the target, pointing inside the root',
    1,
    (m) => {
      symlinkSync('hostname', join(m.root, 'etc/motd'));
      // Steps before prepare/files (the modules-load file) must not be written either.
      writeFileSync(m.config, `${HEADER}spec:\n  kernelModules: [overlay]\n  files:\n    - { path: /etc/sysctl.d/10-site.conf, content: "x" }\n    - { path: /etc/motd, content: "node-2" }\n`);
    },
    ['error: step prepare/files failed: spec.files[1].path: /etc/motd is a symbolic link; machineadm does not write through links\nhint: remove the link (or point the field at the real file) and run again\n'],
  ],
];

function expectLines(stderr: string, lines: string[], m: Machine): void {
  for (const line of lines) expect(stderr).toContain(line.replaceAll('$CONFIG', m.config).replaceAll('$OUTSIDE', m.outside).replaceAll('$ROOT', m.root));
}

describe('hostile configuration', () => {
  it.each(refusedAtValidation)('refuses %s with exit 2 before anything is touched', async (_what, setup, lines) => {
    const m = machine();
    setup(m);
    const before = snapshot(m);
    const run = await prepare(m);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/^error: invalid configuration \(\d+ problems?\):\n/);
    expectLines(run.stderr, lines, m);
    expect(snapshot(m)).toEqual(before);
  }, 20_000);

  it.each(refusedByTheFilesStep)('refuses %s with exit %i, writing none of the files', async (_what, code, setup, lines) => {
    const m = machine();
    setup(m);
    const before = snapshot(m);
    const run = await prepare(m);
    expect(run.code, run.stderr).toBe(code);
    expectLines(run.stderr, lines, m);
    // Found before the run's first change: not even the run's own records are written.
    expect(snapshot(m)).toEqual(before);
  }, 20_000);

  it('refuses a 100 MB document on standard input with exit 2, reading no more than the limit', async () => {
    const m = machine();
    const before = snapshot(m);
    let sent = 0;
    const run = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(NODE, ['bin/machineadm.js', 'prepare', '-c', '-', '--root', m.root, '--state-dir', m.state], { cwd: REPO, stdio: ['pipe', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.stdin.on('error', () => {}); // machineadm stops reading at the limit: the pipe breaks
      child.on('close', (code) => resolve({ code, stderr }));
      const chunk = Buffer.alloc(1 << 20, 0x61);
      child.stdin.write(HEADER + 'spec:\n  kernelModules: [overlay]\n# ');
      const pump = (): void => {
        while (sent < HUNDRED_MB) {
          sent += chunk.length;
          if (!child.stdin.write(chunk)) return void child.stdin.once('drain', pump);
        }
        child.stdin.end();
      };
      pump();
    });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('stdin: larger than the limit of 8 MiB\n    hint: a configuration is never that large');
    expect(sent).toBeLessThan(HUNDRED_MB);
    expect(snapshot(m)).toEqual(before);
  }, 30_000);
});
