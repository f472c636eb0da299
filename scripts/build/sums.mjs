// SHA256SUMS of the output directory, updated with the files just built and written atomically.
import { existsSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';

/** outputs: the binaries and compressed copies just built ({ name, sha256 }). */
export async function writeSha256Sums(outDir, outputs) {
  // SHA256SUMS lists every file built into the output directory, not only those built just now;
  // a file that is gone (a compressed copy --no-compress removed) leaves it.
  const sums = new Map();
  const previous = await fsp.readFile(join(outDir, 'SHA256SUMS'), 'utf8').catch(() => '');
  for (const line of previous.split('\n')) {
    const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(line);
    if (m && existsSync(join(outDir, m[2]))) sums.set(m[2], m[1]);
  }
  for (const out of outputs) sums.set(out.name, out.sha256);
  const text = [...sums.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, hash]) => `${hash}  ${name}\n`).join('');
  await fsp.writeFile(join(outDir, 'SHA256SUMS.partial'), text);
  await fsp.rename(join(outDir, 'SHA256SUMS.partial'), join(outDir, 'SHA256SUMS'));
}
