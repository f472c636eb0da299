// reset undoes a run from its records: it asks the machine for no value, since what gave them may
// be gone (cloud-init off or not run yet on this boot, a metadata service that no longer answers).
// A field that takes a value from the machine gets the one the run being undone used, kept in its
// result (--set still wins, and is checked as in any run); without one the reference stays as
// written. The only reset step that reads such a field is a beforeReset command's env: one whose
// value is still unknown is refused before any change, never run without its variable.
import type { Host } from '../../host/index.ts';
import type { RootedFileSystem } from '../../host/fs.ts';
import { ConfigError, type ConfigIssue } from '../../errors.ts';
import { resolveMachineValues } from '../../config/machine-source.ts';
import type { InstanceValues } from '../../config/instance-values.ts';
import { isGivenValueName } from '../../config/machine-names.ts';
import type { MachineConfig } from '../../config/schema/index.ts';
import { describeReference, isMachineReference, referenceName } from '../../config/schema/machine.ts';
import { readLastResult } from '../../report/outcome.ts';

export async function resetMachineValues(host: Host, stateFs: RootedFileSystem, config: MachineConfig, given: InstanceValues): ReturnType<typeof resolveMachineValues> {
  const last = await readLastResult(host.fs, stateFs);
  const earlier: InstanceValues = {};
  for (const v of last?.machine?.machineValues ?? []) {
    const name = v.reference === 'providerID: auto' ? 'providerID' : v.reference;
    if (isGivenValueName(name)) earlier[name] = { value: v.value, source: `the run being reset (${v.source})` };
  }
  const out = await resolveMachineValues(host, config, { given: { ...earlier, ...given }, otherMachine: true, givenOnly: true });
  const issues: ConfigIssue[] = [];
  (out.config.spec.commands?.beforeReset ?? []).forEach((command, i) => {
    for (const [key, value] of Object.entries(command.env ?? {})) {
      if (!isMachineReference(value)) continue;
      issues.push({
        path: `spec.commands.beforeReset[${i}].env.${key}`,
        message: `${describeReference(value)}: the run being reset recorded no ${referenceName(value)}, and reset reads nothing of the machine`,
        hint: `give it with --set ${referenceName(value)}=VALUE`,
      });
    }
  });
  if (issues.length > 0) throw new ConfigError(issues);
  return out;
}
