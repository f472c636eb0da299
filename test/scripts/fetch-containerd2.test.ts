// scripts/fetch-containerd2.sh asks for Debian unstable's containerd at the archive this machine's
// own apt sources name (a site's mirror or proxy), never at a host of its own choosing. apt-get is
// a stand-in here: it answers indextargets as apt does, keeps the source list it is given, and has
// no containerd 2.x to download.
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { scratchDir } from '../support/tmp.ts';

const SCRIPT = new URL('../../scripts/fetch-containerd2.sh', import.meta.url).pathname;

/** A stand-in apt-get whose configured index targets are `targets` (REPO_URI RELEASE COMPONENT lines). */
function fakeAptGet(targets: string): { bin: string; log: string } {
  const bin = scratchDir();
  const log = join(bin, 'apt-get.log');
  writeFileSync(
    join(bin, 'apt-get'),
    `#!/bin/sh
case " $* " in
  *" indextargets "*) printf '%s' '${targets}' ;;
  *" update"*) for a in "$@"; do case "$a" in Dir::Etc::SourceList=*) cat "\${a#Dir::Etc::SourceList=}" >> '${log}' ;; esac; done ;;
  *" download "*) exit 100 ;;
esac
`,
  );
  chmodSync(join(bin, 'apt-get'), 0o755);
  return { bin, log };
}

async function fetchWith(targets: string) {
  const { bin, log } = fakeAptGet(targets);
  const result = await execa('bash', [SCRIPT, join(scratchDir(), 'containerd2')], { env: { PATH: `${bin}:${process.env.PATH}` }, reject: false });
  return { ...result, sources: (() => { try { return readFileSync(log, 'utf8'); } catch { return ''; } })() };
}

describe('scripts/fetch-containerd2.sh', () => {
  it('asks for unstable at the main archive of the machine\'s own sources, not its security or updates suites', async () => {
    const run = await fetchWith('http://mirror.example.internal/debian-security/ bookworm-security main\nhttp://mirror.example.internal/debian/ bookworm-updates main\nhttp://mirror.example.internal/debian/ bookworm main\n');
    expect(run.sources).toMatch(/^URIs: http:\/\/mirror\.example\.internal\/debian\/$/m);
    expect(run.sources).toMatch(/^Suites: sid$/m);
    expect(run.sources).not.toMatch(/deb\.debian\.org/);
    // The stand-in has no package: the script says so and fails quietly, as it does without a network.
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toContain('no containerd 2.x package in Debian unstable');
  });

  it('fails quietly, asking no host, when the machine has no Debian archive with a main component', async () => {
    const run = await fetchWith('http://mirror.example.internal/debian-security/ bookworm-security main\n');
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toContain("no Debian archive with a main component in this machine's apt sources");
    expect(run.sources).toBe('');
  });

  it('names no package host of its own', () => {
    expect(readFileSync(SCRIPT, 'utf8')).not.toMatch(/https?:\/\//);
  });
});
