// The version of a containerd binary, parsed the way machineadm's facts do.
import { parseContainerdVersion } from '../../src/host/facts.ts';

export function parseFacts(versionOutput: string): string {
  const v = parseContainerdVersion(versionOutput);
  if (!v) throw new Error(`cannot read a version from: ${versionOutput}`);
  return v;
}
