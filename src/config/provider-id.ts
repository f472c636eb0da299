// Provider IDs in each cloud's own format, the same string that cloud's controller manager writes
// into Node.spec.providerID (and Cluster API matches Machines by):
//   aws:///<zone>/<instance-id>                              (cloud-provider-aws)
//   azure:///subscriptions/<sub>/resourceGroups/<rg>/providers/Microsoft.Compute/virtualMachines/<name>
//   azure:///subscriptions/<sub>/resourceGroups/<rg>/providers/Microsoft.Compute/virtualMachineScaleSets/<ss>/virtualMachines/<index>
//                                                            (cloud-provider-azure; the resource group in lower case)
//   gce://<project>/<zone>/<instance-name>                  (cloud-provider-gcp)
// Pure: composes from values already read; every part is checked, since one part with a "/"
// would name another machine.
import type { SourcedValue, InstanceValues } from './instance-values.ts';

const PART = /^[A-Za-z0-9][A-Za-z0-9._()-]{0,127}$/;

export type ProviderIdResult = { ok: SourcedValue } | { problem: string };

export function composeProviderId(values: InstanceValues): ProviderIdResult {
  const cloud = values.cloud?.value;
  const parts = (names: string[]): SourcedValue[] | { problem: string } => {
    const found: SourcedValue[] = [];
    for (const name of names) {
      const v = values[name];
      if (!v) return { problem: `needs ${name}, which ${cloud ?? 'the machine'} did not give` };
      if (!PART.test(v.value)) return { problem: `${name} from ${v.source} ${JSON.stringify(v.value)} cannot be part of a provider ID (letters, digits, ".", "_", "-", "(", ")"; at most 128; starting with a letter or digit)` };
      found.push(v);
    }
    return found;
  };
  const compose = (names: string[], format: (p: string[]) => string): ProviderIdResult => {
    const got = parts(names);
    if (!Array.isArray(got)) return got;
    return { ok: { value: format(got.map((p) => p.value)), source: got.map((p) => p.source).join(' + ') } };
  };
  switch (cloud) {
    case 'aws':
      return compose(['zone', 'instanceId'], ([zone, id]) => `aws:///${zone}/${id}`);
    case 'gce':
      return compose(['gce.project', 'zone', 'instanceName'], ([project, zone, name]) => `gce://${project}/${zone}/${name}`);
    case 'azure': {
      const prefix = (sub: string, rg: string) => `azure:///subscriptions/${sub}/resourceGroups/${rg.toLowerCase()}/providers/Microsoft.Compute`;
      const scaleSet = values['azure.vmScaleSetName']?.value;
      const name = values['azure.name']?.value ?? '';
      // A uniform scale set names its instances <scale set>_<index>; a flexible one gives them
      // ordinary VM names, and they are addressed as virtual machines.
      const index = scaleSet !== undefined && name.startsWith(`${scaleSet}_`) ? name.slice(scaleSet.length + 1) : undefined;
      if (index !== undefined && /^\d+$/.test(index)) {
        return compose(['azure.subscriptionId', 'azure.resourceGroupName', 'azure.vmScaleSetName'], ([sub, rg, ss]) => `${prefix(sub!, rg!)}/virtualMachineScaleSets/${ss}/virtualMachines/${index}`);
      }
      return compose(['azure.subscriptionId', 'azure.resourceGroupName', 'azure.name'], ([sub, rg, vm]) => `${prefix(sub!, rg!)}/virtualMachines/${vm}`);
    }
    default:
      return { problem: 'auto needs a cloud with a metadata service (AWS, Azure or GCE)' };
  }
}
