// One build: the identity, the bundle and the blob (once for all targets), then each target's
// executable and its compressed copies, and SHA256SUMS, in a work folder under .build/ removed at
// the end.
import { readFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join, relative } from 'node:path';
import { bundle } from './bundle.mjs';
import { log, ROOT, setQuiet } from './common.mjs';
import { compressBinary } from './compress.mjs';
import { gitCommit, releasePublicKey } from './identity.mjs';
import { seaBlob } from './sea.mjs';
import { writeSha256Sums } from './sums.mjs';
import { buildTarget } from './target.mjs';

export async function build(options) {
  setQuiet(options.quiet);
  const started = Date.now();
  const identity = { version: JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version, commit: gitCommit() };
  const key = releasePublicKey();
  if (key) identity.releasePublicKey = key;
  await fsp.mkdir(join(ROOT, '.build'), { recursive: true });
  const workDir = await fsp.mkdtemp(join(ROOT, '.build', 'work-'));
  try {
    const code = await bundle(workDir, identity);
    const blob = await seaBlob(workDir, code.pieces);
    log(`bundle ${(code.bytes / 1024).toFixed(0)} KiB + ${code.lazy} lazy pieces ${(code.lazyBytes / 1024).toFixed(0)} KiB (sha256 ${code.sha256.slice(0, 16)}), blob ${(blob.length / 1024).toFixed(0)} KiB, commit ${identity.commit}${key ? ', release key built in' : ''}`);
    const outputs = [];
    const compressing = [];
    try {
      for (const target of options.targets) {
        const t = Date.now();
        const out = await buildTarget(target, blob, options, workDir);
        log(`${relative(process.cwd(), out.path) || out.path}: ${(out.size / 1048576).toFixed(1)} MiB in ${((Date.now() - t) / 1000).toFixed(1)} s`);
        outputs.push(out);
        // In other processes, while the next target builds. Its failure is reported below, after
        // the loop (the empty catch keeps Node from ending the build on it as unhandled meanwhile).
        const copies = compressBinary(out, target, options);
        copies.catch(() => {});
        compressing.push(copies);
      }
    } finally {
      // No compression outlives the build, also when a target failed.
      await Promise.allSettled(compressing);
    }
    for (const copies of await Promise.all(compressing)) outputs.push(...copies);
    await writeSha256Sums(options.outDir, outputs);
    log(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return Object.assign(outputs, { bundleSha256: code.sha256, identity });
  } finally {
    await fsp.rm(workDir, { recursive: true, force: true });
  }
}
