// Fails the run when a test created one of the host's default containerd, CNI, skopeo or machineadm
// folders that did not exist before it (vitest exits non-zero on a global teardown error).
import { existsSync } from 'node:fs';
import { absentHostPaths } from '../support/host-paths.ts';

export function setup(): () => void {
  const absent = absentHostPaths();
  return () => {
    const created = absent.filter((p) => existsSync(p));
    if (created.length) throw new Error(`the test run created ${created.join(', ')} on this machine; point the test that did at a scratch directory (and remove them)`);
  };
}
