// Provider IDs in each cloud's own format, the same string that cloud's controller manager writes
// into Node.spec.providerID (and Cluster API matches Machines by):
//   aws:///<zone>/<instance-id>                              (cloud-provider-aws)
//   azure:///subscriptions/<sub>/resourceGroups/<rg>/providers/Microsoft.Compute/virtualMachines/<name>
//   azure:///subscriptions/<sub>/resourceGroups/<rg>/providers/Microsoft.Compute/virtualMachineScaleSets/<ss>/virtualMachines/<index>
//                                                            (cloud-provider-azure; the resource group in lower case;
//                                                            from the VM's own compute.resourceId)
//   gce://<project>/<zone>/<instance-name>                  (cloud-provider-gcp)
// Pure: composes from values already read; every part is checked, since one part with a "/"
// would name another machine.
import type { SourcedValue, InstanceValues } from './instance-values.ts';

const PART = /^[A-Za-z0-9][A-Za-z0-9._()-]{0,127}$/;
// Azure writes the fixed words in varying case (resourcegroups, microsoft.compute); the names
// between them are checked as parts below.
const AZURE_RESOURCE_ID = /^\/subscriptions\/([^/]+)\/resourceGroups\/([^/]+)\/providers\/Microsoft\.Compute\/(?:virtualMachines\/([^/]+)|virtualMachineScaleSets\/([^/]+)\/virtualMachines\/([^/]+))$/i;

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
      // compute.resourceId is the VM's Azure resource ID, the path cloud-provider-azure puts after
      // "azure://": a VM (also a flexible scale set's) or a uniform scale set's instance.
      const id = values['azure.resourceId'];
      if (!id) return { problem: 'needs compute.resourceId, which the Azure metadata service did not give' };
      const m = AZURE_RESOURCE_ID.exec(id.value);
      if (!m) return { problem: `azure.resourceId from ${id.source} ${JSON.stringify(id.value)} is not the resource ID of a virtual machine (/subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.Compute/virtualMachines/<name>, or .../virtualMachineScaleSets/<set>/virtualMachines/<index>)` };
      const [, sub, rg, vm, scaleSet, index] = m as unknown as [string, string, string, string | undefined, string | undefined, string | undefined];
      const parts = [sub, rg, ...(vm !== undefined ? [vm] : [scaleSet!, index!])];
      const bad = parts.find((p) => !PART.test(p));
      if (bad !== undefined) return { problem: `azure.resourceId from ${id.source} ${JSON.stringify(id.value)}: ${JSON.stringify(bad)} cannot be part of a provider ID (letters, digits, ".", "_", "-", "(", ")"; at most 128; starting with a letter or digit)` };
      const prefix = `azure:///subscriptions/${sub}/resourceGroups/${rg.toLowerCase()}/providers/Microsoft.Compute`;
      return { ok: { value: vm !== undefined ? `${prefix}/virtualMachines/${vm}` : `${prefix}/virtualMachineScaleSets/${scaleSet}/virtualMachines/${index}`, source: id.source } };
    }
    default:
      return { problem: 'auto needs a cloud with a metadata service (AWS, Azure or GCE)' };
  }
}
