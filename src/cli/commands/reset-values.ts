// reset undoes a run from its records: it asks the machine for no value, since what gave them may
// be gone (cloud-init off or not run yet on this boot, a metadata service that no longer answers).
// A field that takes a value from the machine gets the one the run being undone used, kept in its
// result; without one the reference stays as written, which no reset step reads.
import type { Host } from '../../host/index.ts';
import type { RootedFileSystem } from '../../host/fs.ts';
import { ConfigError } from '../../errors.ts';
import { resolveMachineValues } from '../../config/machine-source.ts';
import type { InstanceValues } from '../../config/instance-values.ts';
import { isGivenValueName } from '../../config/machine-names.ts';
import type { MachineConfig } from '../../config/schema/index.ts';
import { readLastResult } from '../../report/outcome.ts';

export async function resetMachineValues(host: Host, stateFs: RootedFileSystem, config: MachineConfig, given: InstanceValues): ReturnType<typeof resolveMachineValues> {
  const last = await readLastResult(host.fs, stateFs);
  const earlier: InstanceValues = {};
  for (const v of last?.machine?.machineValues ?? []) {
    const name = v.reference === 'providerID: auto' ? 'providerID' : v.reference;
    if (isGivenValueName(name)) earlier[name] = { value: v.value, source: `the run being reset (${v.source})` };
  }
  try {
    return await resolveMachineValues(host, config, { given: { ...earlier, ...given }, otherMachine: true });
  } catch (error) {
    if (error instanceof ConfigError) return { config, resolved: [] };
    throw error;
  }
}
