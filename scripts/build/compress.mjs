// The compressed copies of each binary, written beside it: what the loaders fetch instead of the
// binary when the mirror has them (docs/loaders/). They are only a way to carry the binary: the
// loaders inflate them as they download and verify what comes out against the plain binary's
// signature or SHA-256, so they need no signature of their own.
//
// Measured on the linux-x64 binary (126 MiB, 2026-12), with the CPU time to inflate it: gzip -9
// 44.2 MiB, 0.9 s (-6: 44.5 MiB, made in a third of the time); zstd 19 32.4 MiB, 0.3 s; xz -6
// 29.4 MiB but 2.1 s, about as long as the download at 100 Mbit/s and longer than the plain
// binary's at 1 Gbit/s; zstd 22 or a 128 MiB window save under 2% for 128 MiB more memory at
// inflate. So gzip for every target (every loader can inflate it: gzip is on every Linux, .NET
// has GZipStream) and zstd for Linux (the Windows loader has nothing built in for it).
//
// Both are made by the pinned Node release's zlib, in a child process: the bytes depend neither on
// the Node that runs the build (Node 20 has no zstd) nor on a tool outside the npm registry (xz),
// and the same release compresses the same way every time. Two costs: Node's zlib (Chromium's)
// hashes with the CPU's CRC32C instruction where it has one, so gzip bytes made on an x86-64 CPU
// without SSE4.2 differ (still inflating to the same binary); and it compresses ~3% worse than
// GNU gzip -9 (43.0 MiB), which not every build machine has and whose bytes are its own.
import { spawn } from 'node:child_process';
import * as fsp from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { basename } from 'node:path';
import { BuildError, log, sha256File } from './common.mjs';
import { pinnedNode } from './node-release.mjs';

/** Each format, its file name suffix, the level the build uses and the targets that get it (the slowest first: it starts first). */
export const COMPRESSIONS = {
  zstd: { suffix: '.zst', level: 19, targets: ['linux-x64', 'linux-arm64'] },
  gzip: { suffix: '.gz', level: 9, targets: ['linux-x64', 'linux-arm64', 'windows-x64'] },
};

// Runs in the pinned Node: streams the file through the compressor. zstd gets a checksum of the
// content (zstd -d then fails on a damaged file by itself, as gzip does with its CRC) and the
// content size. zlib writes the OS of the machine into the gzip header (3 Unix, 10 Windows): it
// is set to 3 wherever the build runs. zlib writes no name, and 0 as the time.
const COMPRESSOR = `const zlib = require('node:zlib');
const fs = require('node:fs');
const { pipeline } = require('node:stream/promises');
const [source, destination, format, level] = process.argv.slice(1);
const size = fs.statSync(source).size;
const compressor = format === 'gzip'
  ? zlib.createGzip({ level: Number(level) })
  : zlib.createZstdCompress({ pledgedSrcSize: size, params: { [zlib.constants.ZSTD_c_compressionLevel]: Number(level), [zlib.constants.ZSTD_c_checksumFlag]: 1 } });
pipeline(fs.createReadStream(source, { highWaterMark: 1 << 20 }), compressor, fs.createWriteStream(destination)).then(() => {
  if (format !== 'gzip') return;
  const fd = fs.openSync(destination, 'r+');
  fs.writeSync(fd, Buffer.from([3]), 0, 1, 9);
  fs.closeSync(fd);
}).catch((error) => { process.stderr.write(error.message + '\\n'); process.exitCode = 1; });
`;

/** Compresses source into destination (format: a key of COMPRESSIONS) with the pinned Node. */
export function compressFile(source, destination, format, level = COMPRESSIONS[format].level) {
  return new Promise((resolve, reject) => {
    const child = spawn(pinnedNode(), ['-e', COMPRESSOR, source, destination, format, String(level)], { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH ?? '' } });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new BuildError(`${format} of ${basename(source)} failed: ${stderr.trim() || `exit ${code}`}`))));
  });
}

// As many compressions at a time as there are cores; the build of the next target goes on meanwhile.
const slots = { free: availableParallelism(), waiting: [] };
async function inSlot(job) {
  if (slots.free > 0) slots.free--;
  else await new Promise((resolve) => slots.waiting.push(resolve));
  try {
    return await job();
  } finally {
    const next = slots.waiting.shift();
    if (next) next();
    else slots.free++;
  }
}

/**
 * Writes the compressed copies of a binary just built ({ name, path }) for its target, after
 * removing every compressed copy of an earlier build beside it (with --no-compress too): a stale
 * copy would inflate to a binary its signature does not match, and loaders would refuse it.
 */
export async function compressBinary(binary, target, { compress }) {
  const formats = Object.entries(COMPRESSIONS).filter(([, c]) => compress && c.targets.includes(target));
  await Promise.all(Object.values(COMPRESSIONS).map((c) => fsp.rm(binary.path + c.suffix, { force: true })));
  return Promise.all(
    formats.map(([format, { suffix }]) =>
      inSlot(async () => {
        const started = Date.now();
        const path = binary.path + suffix;
        await compressFile(binary.path, `${path}.partial`, format).catch(async (error) => {
          await fsp.rm(`${path}.partial`, { force: true });
          throw error;
        });
        await fsp.rename(`${path}.partial`, path);
        const size = (await fsp.stat(path)).size;
        log(`${binary.name}${suffix}: ${(size / 1048576).toFixed(1)} MiB (${((100 * size) / binary.size).toFixed(0)}%) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
        return { name: binary.name + suffix, path, sha256: await sha256File(path), size };
      }),
    ),
  );
}
