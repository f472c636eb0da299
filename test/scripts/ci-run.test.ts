// .ci/run decides that tests never skip (CI=true) itself, whatever the caller's environment: it is
// run in a copy of the repository with stand-ins for dpkg-query, apt-get, npm, the containerd 2.x
// fetch and the VM job, which record what they were given.
import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { scratchDir } from '../support/tmp.ts';

const run = promisify(execFile);
const script = join(import.meta.dirname, '..', '..', '.ci', 'run');

function standIn(path: string, body: string): void {
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
}

describe('.ci/run', () => {
  it.each([
    ['without CI in its environment', {}],
    ['with CI=false from the caller', { CI: 'false' }],
  ])('runs npm ci, npm test and then the VM job with CI=true %s', async (_case, callerEnv) => {
    const repo = scratchDir('machineadm-ci-run-');
    const bin = join(repo, 'bin');
    const log = join(repo, 'calls.log');
    mkdirSync(join(repo, '.ci'));
    mkdirSync(join(repo, 'scripts'));
    mkdirSync(join(repo, 'test', 'vm'), { recursive: true });
    mkdirSync(bin);
    copyFileSync(script, join(repo, '.ci', 'run'));
    standIn(join(repo, 'scripts', 'fetch-containerd2.sh'), 'exit 1');
    standIn(join(repo, 'test', 'vm', 'boot.sh'), `echo "test/vm/boot.sh CI=\${CI:-unset}" >> '${log}'`);
    standIn(join(bin, 'dpkg-query'), "printf 'install ok installed'");
    standIn(join(bin, 'apt-get'), `echo "apt-get $*" >> '${log}'`);
    standIn(join(bin, 'npm'), `echo "npm $* CI=\${CI:-unset}" >> '${log}'`);
    standIn(join(bin, 'dotnet'), `echo "dotnet $*" >> '${log}'`);
    // Neither PowerShell nor Pester is there yet: both are installed, before npm runs.
    const env: NodeJS.ProcessEnv = { PATH: `${bin}:/usr/bin:/bin`, MACHINEADM_PWSH: join(repo, 'no-pwsh'), MACHINEADM_PESTER: join(repo, 'no-pester.psd1'), ...callerEnv };
    await run('bash', [join(repo, '.ci', 'run')], { env });
    const calls = readFileSync(log, 'utf8').trim().split('\n');
    expect(calls.filter((c) => c.startsWith('npm') || c.startsWith('test/vm'))).toEqual(['npm ci --no-audit --no-fund CI=true', 'npm test CI=true', 'test/vm/boot.sh CI=true']);
    expect(calls.slice(0, 2)).toEqual(['dotnet tool install --global PowerShell --version 7.6.10', expect.stringMatching(/^dotnet restore \/\S+\/pester\.csproj$/)]);
  });
});
