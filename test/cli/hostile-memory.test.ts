// Hostile inputs that the limits accept in size but that would cost memory or hang a process: each
// is refused (exit 2) by config validate (what it reads), plan and init of the packaged binary, promptly, with the
// peak RSS GNU time measures at most 256 MiB, and the root and state directory left as they were.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { builtBinary } from '../support/binary.ts';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';
import { snapshotTree } from '../support/tree.ts';

const TIME = '/usr/bin/time';
const skip = existsSync(TIME) ? missingRequirement({ commands: ['mkfifo'] }) : missingRequirement({ commands: ['GNU time (/usr/bin/time)'] });
const PEAK_RSS_LIMIT_KIB = 256 * 1024;
const HEADER = 'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\n';
const WORKER = 'kubernetes: { controlPlaneEndpoint: "10.0.0.10:6443", caCertHashes: ["sha256:' + 'ab'.repeat(32) + '"], token: { valueFrom: { file: /etc/machineadm/token } } }';

interface Case {
  what: string;
  /** Writes the configuration (and the machine's files under root); returns the -c source. */
  setup(dir: string, root: string): string;
  /** What stderr says. */
  message: RegExp;
  /** The commands that read it: config validate reads the configuration, not the machine's secrets. */
  commands?: readonly (readonly string[])[];
}

const ALL = [['config', 'validate'], ['plan'], ['init']] as const;
const ON_THE_MACHINE = [['plan'], ['init']] as const;

const cases: Case[] = [
  {
    what: 'a 7 MiB string aliased 1,000 times (7 GiB once expanded)',
    setup: (dir) => {
      const path = join(dir, 'aliases.yaml');
      writeFileSync(path, `${HEADER}metadata:\n  big: &big "${'x'.repeat(7 * 1024 * 1024)}"\n  copies: [${Array(1000).fill('*big').join(', ')}]\nspec: {}\n`);
      return path;
    },
    message: /YAML aliases expand this document to more than 16 MiB of text/,
  },
  {
    what: 'an inline gzip+base64 file of 2.1 MB that inflates to 2 GiB',
    setup: (dir) => {
      const path = join(dir, 'gzip-bomb.yaml');
      const chunk = Buffer.alloc(64 * 1024 * 1024);
      const gz = gzipSync(Buffer.concat(Array(32).fill(chunk)), { level: 9 });
      writeFileSync(path, `${HEADER}spec:\n  files:\n    - { path: /etc/bomb, encoding: gzip+base64, content: "${gz.toString('base64')}" }\n`);
      return path;
    },
    message: /spec\.files\[0\]\.content: expands to more than 16 MiB once decompressed/,
  },
  {
    what: 'a token file of 1 GiB',
    setup: (dir, root) => {
      mkdirSync(join(root, 'etc/machineadm'), { recursive: true });
      writeFileSync(join(root, 'etc/machineadm/token'), '');
      truncateSync(join(root, 'etc/machineadm/token'), 1024 * 1024 * 1024);
      const path = join(dir, 'token.yaml');
      writeFileSync(path, `${HEADER}spec:\n  ${WORKER}\n`);
      return path;
    },
    message: /spec\.kubernetes\.token: secret file \/etc\/machineadm\/token is larger than 64 KiB \(1073741824 bytes\)/,
    commands: ON_THE_MACHINE,
  },
  {
    what: 'a FIFO nobody writes to as the token file',
    setup: (dir, root) => {
      mkdirSync(join(root, 'etc/machineadm'), { recursive: true });
      spawnSync('mkfifo', [join(root, 'etc/machineadm/token')]);
      const path = join(dir, 'fifo-token.yaml');
      writeFileSync(path, `${HEADER}spec:\n  ${WORKER}\n`);
      return path;
    },
    message: /spec\.kubernetes\.token: secret file \/etc\/machineadm\/token is not a regular file/,
    commands: ON_THE_MACHINE,
  },
  {
    what: 'a FIFO nobody writes to as the configuration',
    setup: (dir) => {
      const path = join(dir, 'config.fifo');
      spawnSync('mkfifo', [path]);
      return path;
    },
    message: /config\.fifo: is empty/,
  },
];

describe.skipIf(skip)('hostile input, measured', () => {
  it.each(cases.flatMap((c) => (c.commands ?? ALL).map((command) => [c.what, command.join(' '), c, command] as const)))(
    '%s: %s refuses it with exit 2 within 20 s, peak RSS <= 256 MiB, nothing changed',
    async (_what, _command, c, command) => {
      const binary = await builtBinary();
      const dir = scratchDir('machineadm-hostile-memory-');
      const root = join(dir, 'root');
      const state = join(dir, 'state');
      mkdirSync(root);
      const source = c.setup(dir, root);
      const before = { root: snapshotTree(root) };
      const rss = join(dir, 'rss');
      const args = [...command, '-c', source, '--root', root, ...(command[0] === 'config' ? [] : ['--state-dir', state])];
      const began = Date.now();
      const run = spawnSync(TIME, ['-f', '%M', '-o', rss, binary, ...args], { encoding: 'utf8', timeout: 20_000, env: { ...process.env, NODE_OPTIONS: '' } });
      const tookMs = Date.now() - began;
      const peakKiB = Number(readFileSync(rss, 'utf8').trim().split('\n').at(-1));
      console.log(`${c.what}: ${command.join(' ')}: exit ${run.status}, ${tookMs} ms, peak RSS ${Math.round(peakKiB / 1024)} MiB`);
      expect(run.status, run.stderr.slice(0, 2000)).toBe(2);
      expect(run.stderr).toMatch(c.message);
      expect(peakKiB).toBeLessThanOrEqual(PEAK_RSS_LIMIT_KIB);
      expect(tookMs).toBeLessThan(20_000);
      expect(snapshotTree(root)).toEqual(before.root);
      expect(existsSync(state)).toBe(false);
    },
  );
});
