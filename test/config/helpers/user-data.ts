// Loads user data as a machine reads it at boot: from the AWS metadata service (a real HTTP server
// on 127.0.0.1), with short retries so a broken case fails fast. Servers close after the file.
import { afterAll } from 'vitest';
import { createHost } from '../../../src/host/index.ts';
import { loadConfig, type LoadOptions } from '../../../src/config/load.ts';
import { imdsHandler, startHttp, type RunningServer } from './servers.ts';
import { scratchDir } from '../../support/tmp.ts';

const quick: LoadOptions = {
  imds: { retry: { attempts: 4, baseDelayMs: 20, maxDelayMs: 100, deadlineMs: 4000 }, timeouts: { connectMs: 500, responseMs: 1000, totalMs: 3000 } },
};

/** A `load(userData)` for one test file; call it at the file's top level. */
export function userDataLoader(): (userData: Buffer) => ReturnType<typeof loadConfig> {
  const servers: RunningServer[] = [];
  afterAll(async () => {
    for (const s of servers) await s.close();
  });
  return async (userData) => {
    const s = await startHttp(imdsHandler('aws', { userData }));
    servers.push(s);
    return loadConfig(createHost({ root: scratchDir(), env: { MACHINEADM_IMDS_ENDPOINT: s.url } }), ['imds://aws/user-data'], quick);
  };
}
