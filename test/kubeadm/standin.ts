// Running the kubeadm stand-in (test/fixtures/bin/kubeadm) from tests, with Node 24 first on PATH.
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

export const REPO = resolve(import.meta.dirname, '../..');
export const FIXTURE_BIN = resolve(REPO, 'test/fixtures/bin');
export const NODE_BIN = resolve(REPO, 'node_modules/.bin');
export const TEST_PATH = `${FIXTURE_BIN}:${NODE_BIN}:${process.env.PATH ?? ''}`;

export interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function runStandin(args: string[], env: Record<string, string> = {}): Ran {
  const result = spawnSync(resolve(FIXTURE_BIN, 'kubeadm'), args, {
    encoding: 'utf8',
    env: { ...process.env, PATH: TEST_PATH, ...env },
    timeout: 30_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}
