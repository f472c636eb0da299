// Cluster API templates fill per-machine values with cloud-init's Jinja ({{ ds.meta_data.* }},
// {{ v1.* }}). machineadm reads the same values from the machine ({ fromMachine: NAME }); a
// template it does not know is refused, never passed on as text.
import type { MachineReferenceName } from '../config/schema/machine.ts';

// cloud-init's instance-data names (standardized v1 keys and the datasource's meta_data) for the
// values machineadm reads itself.
const KNOWN: Record<string, MachineReferenceName> = {
  'v1.local_hostname': 'localHostname',
  local_hostname: 'localHostname',
  'ds.meta_data.local_hostname': 'localHostname',
  'ds.meta_data["local_hostname"]': 'localHostname',
  "ds.meta_data['local_hostname']": 'localHostname',
  'ds.meta_data.hostname': 'localHostname',
  // GCE's local hostname is <name>.c.<project>.internal; its node name is the instance name.
  'ds.meta_data.local_hostname.split(".")[0]': 'instanceName',
  "ds.meta_data.local_hostname.split('.')[0]": 'instanceName',
  'v1.instance_id': 'instanceId',
  instance_id: 'instanceId',
  'ds.meta_data.instance_id': 'instanceId',
  'ds.meta_data["instance_id"]': 'instanceId',
  'v1.availability_zone': 'zone',
  availability_zone: 'zone',
  'ds.meta_data.placement.availability_zone': 'zone',
  'v1.region': 'region',
  region: 'region',
  'ds.meta_data.placement.region': 'region',
  'ds.meta_data.local_ipv4': 'privateIP',
  'ds.ec2_metadata.local_ipv4': 'privateIP',
  'ds.meta_data["local_ipv4"]': 'privateIP',
  'ds.meta_data.instance_type': 'instanceType',
  'v1.instance_type': 'instanceType',
};

// Afterburn's (coreos-metadata's) variables, which Flatcar templates put into CABPK's kubeadm file
// with envsubst (AFTERBURN_* and the older COREOS_* names; CUSTOM_ is a template's own unit, which
// writes the machine's hostname from its metadata).
const AFTERBURN: Record<string, MachineReferenceName> = {
  AWS_HOSTNAME: 'localHostname',
  EC2_HOSTNAME: 'localHostname',
  AWS_INSTANCE_ID: 'instanceId',
  EC2_INSTANCE_ID: 'instanceId',
  AWS_IPV4_LOCAL: 'privateIP',
  EC2_IPV4_LOCAL: 'privateIP',
  AWS_AVAILABILITY_ZONE: 'zone',
  EC2_AVAILABILITY_ZONE: 'zone',
  AWS_REGION: 'region',
  EC2_REGION: 'region',
  AZURE_VMNAME: 'instanceName',
  AZURE_IPV4_DYNAMIC: 'privateIP',
  GCP_HOSTNAME: 'localHostname',
  GCE_HOSTNAME: 'localHostname',
  OPENSTACK_HOSTNAME: 'localHostname',
  OPENSTACK_INSTANCE_UUID: 'instanceId',
  OPENSTACK_IPV4_LOCAL: 'privateIP',
  CUSTOM_HOSTNAME: 'localHostname',
};

const TEMPLATE = /\{\{\s*(.*?)\s*\}\}/g;
const AFTERBURN_VARIABLE = /\$\{(?:COREOS|AFTERBURN)_([A-Z0-9_]+)\}/g;
const ONE_AFTERBURN_VARIABLE = new RegExp(`^\\s*${AFTERBURN_VARIABLE.source}\\s*$`);

/** The machine value a Flatcar template's Afterburn variable (${COREOS_EC2_HOSTNAME}) stands for, or undefined. */
export function afterburnValueOf(value: string): MachineReferenceName | undefined {
  const match = ONE_AFTERBURN_VARIABLE.exec(value);
  return match ? AFTERBURN[match[1]!] : undefined;
}

export function hasTemplate(value: string): boolean {
  return /\{\{|\{%/.test(value);
}

/** A cloud-init template, or an Afterburn variable a Flatcar template's envsubst fills in. */
export function hasMachineTemplate(value: string): boolean {
  return hasTemplate(value) || /\$\{(?:COREOS|AFTERBURN)_/.test(value);
}

/**
 * Why a template is refused. `{{ .kubernetesVersion }}` is Go's text/template, which an
 * infrastructure provider's controller (Equinix's) fills in before the machine boots: said so,
 * since no cloud-init or machineadm value stands for it.
 */
function unknownTemplate(expression: string): string {
  return /^[.`]/.test(expression)
    ? `holds an infrastructure provider's template ({{ ${expression} }}, Go's text/template, filled in by that provider's controller before the machine boots), which machineadm cannot fill`
    : `holds a cloud-init template machineadm does not know ({{ ${expression} }})`;
}

/** The machine value a value made of one template (or one Afterburn variable) stands for, or undefined. */
export function machineValueOf(value: string): MachineReferenceName | undefined {
  const match = /^\s*\{\{\s*(.*?)\s*\}\}\s*$/.exec(value);
  return match ? KNOWN[match[1]!] : afterburnValueOf(value);
}

/** The references a value's templates use, or undefined when one is unknown. */
export function templateReferences(value: string): MachineReferenceName[] | undefined {
  const out: MachineReferenceName[] = [];
  for (const match of value.matchAll(TEMPLATE)) {
    const known = KNOWN[match[1]!];
    if (!known) return undefined;
    out.push(known);
  }
  return /\{%/.test(value) ? undefined : out;
}

/**
 * A provider ID written as a template (aws:///{{ zone }}/{{ instance id }}, azure's and gce's
 * forms) is what machineadm's `providerID: auto` composes from the same metadata.
 */
export function isProviderIdTemplate(value: string): boolean {
  const refs = templateReferences(value);
  const afterburn = [...value.matchAll(AFTERBURN_VARIABLE)].map((m) => AFTERBURN[m[1]!]);
  const all = [...(refs ?? []), ...afterburn];
  return refs !== undefined && !afterburn.includes(undefined) && all.length > 0 && /^[a-z]+:\/\//.test(value) && all.every((r) => r === 'instanceId' || r === 'zone' || r === 'region' || r === 'instanceName');
}

/** The clouds whose provider IDs `providerID: auto` composes (src/config/provider-id.ts). */
export function composedProviderScheme(value: string): boolean {
  return /^(aws|azure|gce):\/\//.test(value);
}

/** The variable a command reads a machine value from (localHostname: MACHINE_LOCAL_HOSTNAME). */
export function machineVariable(name: MachineReferenceName): string {
  return `MACHINE_${name.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;
}

/**
 * A shell line's templates as variables the command gets from the machine ({{ v1.local_hostname }}
 * becomes ${MACHINE_LOCAL_HOSTNAME}, with env MACHINE_LOCAL_HOSTNAME: { fromMachine: localHostname }).
 * cloud-init put the value in before the shell read the line; the shell now puts it in itself,
 * which it does outside quotes and within double quotes, but not within single quotes: a template
 * there is refused (`problem`), as is one machineadm does not know.
 */
export function shellTemplates(line: string): { text: string; env: Record<string, { fromMachine: MachineReferenceName }> } | { problem: string } {
  const env: Record<string, { fromMachine: MachineReferenceName }> = {};
  let text = '';
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < line.length; ) {
    const template = line.startsWith('{{', i) ? /^\{\{\s*(.*?)\s*\}\}/.exec(line.slice(i)) : null;
    if (template) {
      const name = KNOWN[template[1]!];
      if (!name) return { problem: unknownTemplate(template[1]!) };
      if (quote === "'") return { problem: `holds a cloud-init template within single quotes ({{ ${template[1]} }}), where the shell puts in no variable` };
      env[machineVariable(name)] = { fromMachine: name };
      text += `\${${machineVariable(name)}}`;
      i += template[0].length;
      continue;
    }
    const c = line[i]!;
    if (c === '\\' && quote !== "'") {
      text += line.slice(i, i + 2);
      i += 2;
      continue;
    }
    if ((c === "'" || c === '"') && (quote === undefined || quote === c)) quote = quote === undefined ? c : undefined;
    text += c;
    i++;
  }
  if (/\{%/.test(line)) return { problem: 'holds a cloud-init template statement ({% ... %})' };
  return { text, env };
}

/**
 * A file's templates as names machineadm puts the machine's values in for ({{ v1.local_hostname }}
 * becomes ${MACHINE_LOCAL_HOSTNAME}, with values: { MACHINE_LOCAL_HOSTNAME: { fromMachine:
 * localHostname } }), as cloud-init rendered them into plain content; one machineadm does not know,
 * a statement, or text that already says ${MACHINE_...} of a name it takes is refused (`problem`).
 */
export function fileTemplates(text: string): { text: string; values: Record<string, { fromMachine: MachineReferenceName }> } | { problem: string } {
  if (/\{%/.test(text)) return { problem: 'holds a cloud-init template statement ({% ... %})' };
  const values: Record<string, { fromMachine: MachineReferenceName }> = {};
  for (const match of text.matchAll(TEMPLATE)) {
    const name = KNOWN[match[1]!];
    if (!name) return { problem: unknownTemplate(match[1]!) };
    values[machineVariable(name)] = { fromMachine: name };
  }
  const taken = Object.keys(values).find((name) => text.includes(`\${${name}}`));
  if (taken) return { problem: `says \${${taken}} already, the name its template would take` };
  return { text: text.replace(TEMPLATE, (_, expression: string) => `\${${machineVariable(KNOWN[expression]!)}}`), values };
}
