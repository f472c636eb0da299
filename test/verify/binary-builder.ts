// The linux-x64 binary built with a given release key, copied into the test's own directory so
// that the signature written beside it never lands in the shared build cache.
import { copyFileSync, mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { builtBinary } from '../support/binary.ts';

export type BinaryBuilder = (options: { releasePublicKey: string; outDir: string }) => Promise<string>;

/** A builder, or the reason there is none on this machine. */
export async function binaryBuilder(): Promise<BinaryBuilder | string> {
  if (process.platform !== 'linux' || process.arch !== 'x64') return 'the binary is built and run on linux-x64 only';
  return async ({ releasePublicKey, outDir }) => {
    const cached = await builtBinary({ releasePublicKey });
    mkdirSync(outDir, { recursive: true });
    const copy = join(outDir, basename(cached));
    copyFileSync(cached, copy);
    return copy;
  };
}
