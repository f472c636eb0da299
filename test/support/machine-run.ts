// What the end-to-end tests of a whole run share: the packaged binary, a collector on 127.0.0.1
// for its events, the environment that runs kubeadm's stand-in under --rootfs, and a look at
// whether a process still runs.
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll } from 'vitest';
import { builtBinary } from './binary.ts';
import { startCollector, type Collector } from '../report/collector.ts';
import { TEST_PATH } from '../kubeadm/standin.ts';

export interface BinaryAndCollector {
  readonly binary: string;
  readonly collector: Collector;
}

/** Builds (or reuses) the binary and starts a collector before the file's tests; stops it after. */
export function binaryAndCollector(): BinaryAndCollector {
  const shared = { binary: '', collector: undefined as Collector | undefined };
  beforeAll(async () => {
    shared.binary = await builtBinary();
    shared.collector = await startCollector();
  });
  afterAll(async () => shared.collector?.close());
  return {
    get binary() {
      return shared.binary;
    },
    get collector() {
      return shared.collector!;
    },
  };
}

/** The environment for a run whose kubeadm is the strict stand-in, run with --rootfs under --root. */
export function standinEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, NODE_OPTIONS: '', PATH: TEST_PATH, KUBEADM_STANDIN_VERSION: 'v1.31.2', MACHINEADM_KUBEADM_ROOTFS: '1', ...extra };
}

/** True while a process with this pid runs (a zombie waiting for its reaper has ended). */
export function processRuns(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Waits until no process started for this root is left (kubeadm outlives a killed machineadm). */
export async function quiet(root: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const busy = readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .some((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(root);
        } catch {
          return false;
        }
      });
    if (!busy) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`processes for ${root} did not end`);
}
