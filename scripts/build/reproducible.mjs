// --check-reproducible: builds twice, the second time into a folder under .build/, and compares
// the binaries byte for byte.
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import { BuildError, log, ROOT } from './common.mjs';
import { build } from './run.mjs';

export async function checkReproducible(options) {
  const first = await build(options);
  const again = await fsp.mkdtemp(join(ROOT, '.build', 'reproduce-'));
  try {
    log('building again to compare');
    const second = await build({ ...options, outDir: again });
    let same = true;
    for (const a of first) {
      const b = second.find((o) => o.name === a.name);
      const ok = b?.sha256 === a.sha256;
      same &&= ok;
      process.stdout.write(`${ok ? 'identical' : 'DIFFERENT'}  ${a.name}  ${a.sha256}${ok ? '' : ` != ${b?.sha256}`}\n`);
    }
    if (!same && (first.bundleSha256 !== second.bundleSha256 || JSON.stringify(first.identity) !== JSON.stringify(second.identity))) {
      throw new BuildError(
        `the sources or the commit changed between the two builds (bundle ${first.bundleSha256.slice(0, 16)} then ${second.bundleSha256.slice(0, 16)}, ` +
          `commit ${first.identity.commit} then ${second.identity.commit}): rerun the check on a tree nobody is editing`,
      );
    }
    if (!same) throw new BuildError('two builds from the same sources differ: the build is not reproducible');
  } finally {
    await fsp.rm(again, { recursive: true, force: true });
  }
}
