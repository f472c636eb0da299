// When machineadm works on a scratch --root, changes to the running kernel and services are not
// made: the step says so instead of pretending.
import type { Host } from '../host/index.ts';

export function liveSkipReason(host: Host): string | undefined {
  return host.fs.isLiveRoot ? undefined : `live change skipped under --root ${host.fs.root}`;
}
