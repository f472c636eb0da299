// What the tests of the secret stores share: a machine root holding the test CA (the stores'
// caFile), a host whose waits between retries are recorded instead of slept, and the text of a
// failed read (its message and hints) to look for names in, and for secrets not to be in.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, expect } from 'vitest';
import { createConfigHost, type ConfigHost } from '../../../src/host/config-host.ts';
import { ConfigError, MachineadmError } from '../../../src/errors.ts';
import { scratchDir } from '../../support/tmp.ts';
import { makeTestCa, type TestCa } from './servers.ts';

/** The test CA's PEM on the machine. */
export const CA_FILE = '/etc/ssl/test-ca.pem';

export interface StoreMachine {
  readonly root: string;
  readonly ca: TestCa;
  /** The waits the last host made asked for. */
  readonly waits: number[];
  /** A host for the root whose metadata service is at `imds`. */
  host(imds: string, offline?: boolean): ConfigHost;
}

/** A root with the test CA at CA_FILE (made before the file's tests). */
export function storeMachine(): StoreMachine {
  const root = scratchDir();
  let ca: TestCa | undefined;
  let waits: number[] = [];
  beforeAll(() => {
    ca = makeTestCa(scratchDir());
    mkdirSync(join(root, 'etc/ssl'), { recursive: true });
    writeFileSync(join(root, CA_FILE), ca.caPem);
  });
  return {
    root,
    get ca() {
      return ca!;
    },
    get waits() {
      return waits;
    },
    host(imds, offline = false) {
      waits = [];
      const recorded = waits;
      return { ...createConfigHost({ root, offline, env: { MACHINEADM_IMDS_ENDPOINT: imds } }), sleep: async (ms) => void recorded.push(ms) };
    },
  };
}

/** The error a read fails with, and its message and hints as one text. */
export async function failure(promise: Promise<unknown>): Promise<MachineadmError & { text: string }> {
  const error = await promise.then(
    () => expect.fail('the read succeeded'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(MachineadmError);
  const e = error as MachineadmError;
  const hints = e instanceof ConfigError ? e.issues.map((i) => `${i.path}: ${i.message}\n${i.hint ?? ''}`) : [e.hint ?? ''];
  return Object.assign(e, { text: [e.message, ...hints].join('\n') });
}
