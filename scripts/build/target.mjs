// One target's executable: its base binary (optionally stripped, unsigned on Windows) with the blob
// injected, written into the output directory.
import { spawnSync } from 'node:child_process';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import { fixPeChecksum, removeAuthenticode } from './authenticode.mjs';
import { BuildError, ROOT, sha256File } from './common.mjs';
import { baseTarball, extractEntry, TARGETS } from './node-release.mjs';
import { inject } from './sea.mjs';

function findTool(names) {
  for (const name of names ?? []) {
    if (spawnSync('sh', ['-c', 'command -v "$1"', 'sh', name], { stdio: 'ignore' }).status === 0) return name;
  }
  return undefined;
}

export async function buildTarget(target, blob, options, workDir) {
  const spec = TARGETS[target];
  const tarball = await baseTarball(target, join(ROOT, '.build', 'cache'));
  const extracted = await extractEntry(tarball, spec.entry);
  const base = target.startsWith('windows') ? removeAuthenticode(extracted) : extracted;
  const partial = join(workDir, spec.output);
  await fsp.writeFile(partial, base, { mode: 0o755 });
  if (options.strip && spec.stripTool) {
    const tool = findTool(spec.stripTool);
    if (!tool) throw new BuildError(`--strip: none of ${spec.stripTool.join(', ')} is installed (binutils for ${target})`);
    const result = spawnSync(tool, [partial], { encoding: 'utf8' });
    if (result.status !== 0) throw new BuildError(`${tool} ${spec.output} failed: ${result.stderr.trim()}`);
  }
  await inject(partial, blob);
  if (target.startsWith('windows')) await fsp.writeFile(partial, fixPeChecksum(await fsp.readFile(partial)));
  await fsp.chmod(partial, 0o755);
  await fsp.mkdir(options.outDir, { recursive: true });
  const final = join(options.outDir, spec.output);
  await fsp.copyFile(partial, final + '.partial');
  await fsp.chmod(final + '.partial', 0o755);
  await fsp.rename(final + '.partial', final);
  await fsp.rm(partial, { force: true });
  return { name: spec.output, path: final, sha256: await sha256File(final), size: (await fsp.stat(final)).size };
}
