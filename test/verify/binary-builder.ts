// Builds the linux-x64 binary with a given release key for the tests that need the packaged
// binary. test/support/binary.ts is the project's way to do it; until it is there,
// scripts/build.mjs is called directly (the same build, with MACHINEADM_RELEASE_PUBKEY set).
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

export type BinaryBuilder = (options: { releasePublicKey: string; outDir: string }) => Promise<string>;

/** A builder, or the reason there is none on this machine. */
export async function binaryBuilder(): Promise<BinaryBuilder | string> {
  const support = join(ROOT, 'test/support/binary.ts');
  if (existsSync(support)) {
    const mod = (await import(support)) as Record<string, unknown>;
    const fn = ['buildBinary', 'buildLinuxBinary', 'binaryWithReleaseKey'].map((name) => mod[name]).find((f) => typeof f === 'function');
    if (fn) return fn as BinaryBuilder;
  }
  const script = join(ROOT, 'scripts/build.mjs');
  if (!existsSync(script) || process.platform !== 'linux' || process.arch !== 'x64') return 'needs scripts/build.mjs on linux-x64 to build the binary';
  return async ({ releasePublicKey, outDir }) => {
    const { build } = (await import(script)) as { build: (o: object) => Promise<{ path: string }[]> };
    const saved = process.env.MACHINEADM_RELEASE_PUBKEY;
    process.env.MACHINEADM_RELEASE_PUBKEY = releasePublicKey;
    try {
      const [out] = await build({ targets: ['linux-x64'], outDir, strip: false, quiet: true });
      return out!.path;
    } finally {
      if (saved === undefined) delete process.env.MACHINEADM_RELEASE_PUBKEY;
      else process.env.MACHINEADM_RELEASE_PUBKEY = saved;
    }
  };
}
