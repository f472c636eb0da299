// The SEA blob (made by the embedded Node from the bundle and its pieces) and its injection into
// a base binary with postject.
import { spawnSync } from 'node:child_process';
import * as fsp from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { BuildError } from './common.mjs';
import { pinnedNode } from './node-release.mjs';

const require = createRequire(import.meta.url);

const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const SEA_RESOURCE = 'NODE_SEA_BLOB';

/**
 * The executable's own Node options. A young generation of 2 MiB from the start: with V8's 1 MiB,
 * config validate stopped twice to collect it (2.6-2.9 ms of a 40-47 ms run); version, --help and
 * plan ran the same. V8 accepts the pieces' code caches under this option (the build's tests
 * compile them with it).
 */
export const SEA_EXEC_ARGV = ['--min-semi-space-size=2'];

export async function seaBlob(workDir, pieces) {
  // Neither Node's code cache of the main script nor a snapshot: both are specific to the platform
  // that makes them and one blob serves every target (the arm64 executable warns "Code cache data
  // rejected" at each start), and two snapshots of the same bundle differ in most of their 8 MB
  // (and start no faster). The pieces carry their own caches (writeCodeCaches). Relative paths
  // only, so the blob does not depend on where it is built.
  const config = {
    main: 'machineadm.cjs',
    // The lazy pieces and their code caches, each read only by the command that needs it.
    assets: Object.fromEntries(pieces.flatMap((name) => [[name, `pieces/${name}`], [`${name}.cache`, `pieces/${name}.cache`]])),
    output: 'machineadm.blob',
    disableExperimentalSEAWarning: true,
    useCodeCache: false,
    useSnapshot: false,
    // NODE_OPTIONS (e.g. --require) must not inject code into a program that runs as root.
    execArgvExtension: 'none',
    execArgv: SEA_EXEC_ARGV,
  };
  await fsp.writeFile(join(workDir, 'sea-config.json'), JSON.stringify(config, null, 2) + '\n');
  const result = spawnSync(pinnedNode(), ['--experimental-sea-config', 'sea-config.json'], { cwd: workDir, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
  if (result.status !== 0) throw new BuildError(`node --experimental-sea-config failed: ${(result.stderr || result.stdout).trim()}`);
  return fsp.readFile(join(workDir, 'machineadm.blob'));
}

export async function inject(file, blob) {
  const { inject: postject } = require('postject');
  // postject's ELF library warns about every note section it cannot name; none of it matters.
  const warn = console.warn;
  console.warn = () => {};
  try {
    await postject(file, SEA_RESOURCE, blob, { sentinelFuse: SEA_FUSE });
  } finally {
    console.warn = warn;
  }
}
