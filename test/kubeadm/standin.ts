// Running the kubeadm stand-in (test/fixtures/bin/kubeadm) from tests, with Node 24 first on PATH.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { RenderedKubeadm } from '../../src/kubeadm/render.ts';
import { scratchDir } from '../support/tmp.ts';

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

/**
 * Feeds a rendered kubeadm configuration (and its patches) to the stand-in of that version, in a
 * scratch root laid out as machineadm lays out the machine; returns the run and the root.
 */
export function runRendered(rendered: RenderedKubeadm, version: string, env: Record<string, string> = {}): Ran & { root: string } {
  const root = scratchDir('machineadm-rendered-');
  const file = `/run/machineadm/kubeadm-${rendered.command}.yaml`;
  mkdirSync(join(root, 'run/machineadm'), { recursive: true });
  writeFileSync(join(root, file), rendered.config);
  for (const patch of rendered.patches) {
    mkdirSync(join(root, rendered.patchesDir), { recursive: true });
    writeFileSync(join(root, rendered.patchesDir, patch.name), patch.content);
  }
  return { ...runStandin([rendered.command, '--config', file, '--rootfs', root], { KUBEADM_STANDIN_VERSION: version, ...env }), root };
}
