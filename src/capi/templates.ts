// Cluster API templates fill per-machine values with cloud-init's Jinja ({{ ds.meta_data.* }},
// {{ v1.* }}). machineadm reads the same values from the machine: those it reads itself as
// { fromMachine: NAME }, any other key of the instance data as { fromInstanceData: KEY }, from the
// file cloud-init's templates are filled from. A template that is not one key (an expression, a
// statement, a provider's Go template) is refused, never passed on as text.
import { isInstanceDataPath } from '../config/machine-names.ts';
import type { MachineReference, MachineReferenceName } from '../config/schema/machine.ts';

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

// CAPMOX's Ignition data gives a Flatcar template's own units COREOS_CUSTOM_INSTANCE_ID, the VM's
// SMBIOS UUID (its internal/service/vmservice/bootstrap.go), for the provider ID
// proxmox://<that UUID>: the DMI product UUID machineadm reads as instanceId where no cloud's
// metadata service answers.
const SMBIOS_VARIABLES: Record<string, MachineReferenceName> = { CUSTOM_INSTANCE_ID: 'instanceId' };

const TEMPLATE = /\{\{\s*(.*?)\s*\}\}/g;
// cloud-init's templates also know these keys of v1 without "v1." ({{ instance_id }}).
const V1_ALIASES = new Set(['instance_id', 'local_hostname', 'availability_zone', 'region', 'cloud_name', 'platform']);
const AFTERBURN_VARIABLE = /\$\{(?:COREOS|AFTERBURN)_([A-Z0-9_]+)\}/g;
const ONE_AFTERBURN_VARIABLE = new RegExp(`^\\s*${AFTERBURN_VARIABLE.source}\\s*$`);

// CAPZ's Flatcar templates name the node '@@HOSTNAME@@' and have a command put the VM's name from
// Azure's metadata service into CABPK's kubeadm file in its place, with sed: the instanceName
// machineadm reads from the same service.
const AZURE_NAME_FILL = /^\s*sed -i "s\/(@@\w+@@)\/\$\(curl\s[^"]*?'?http:\/\/169\.254\.169\.254\/metadata\/instance\?[^"|]*\|\s*jq -r '?\.compute\.name'?\s*\)\/g?"\s+(\S+)\s*$/;

/** The placeholder and file of a command that fills in the VM's name from Azure's metadata, or undefined. */
export function azureNameFill(line: string): { placeholder: string; file: string } | undefined {
  const match = AZURE_NAME_FILL.exec(line);
  return match ? { placeholder: match[1]!, file: match[2]! } : undefined;
}

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

/** The reference a template's expression stands for: a value machineadm reads, or a key of the instance data. */
function referenceOf(expression: string): MachineReference | undefined {
  const known = KNOWN[expression];
  if (known) return { fromMachine: known };
  // cloud-init's templates also know v1's keys without "v1." ({{ cloud_name }}).
  const path = V1_ALIASES.has(expression) ? `v1.${expression}` : expression;
  return isInstanceDataPath(path) ? { fromInstanceData: path } : undefined;
}

/** What a value made of one template (or one Afterburn variable) stands for, or undefined. */
export function machineReferenceOf(value: string): MachineReference | undefined {
  const match = /^\s*\{\{\s*(.*?)\s*\}\}\s*$/.exec(value);
  if (match) return referenceOf(match[1]!);
  const afterburn = afterburnValueOf(value);
  return afterburn ? { fromMachine: afterburn } : undefined;
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

/**
 * A provider ID written with keys of the instance data (oci://{{ ds["id"] }}) as a template of the
 * same keys: cloud-init's values, read from the same file, for a cloud whose IDs `auto` does not
 * compose. Undefined when a part is anything else.
 */
export function providerIdTemplateOf(value: string): { template: string; values: Record<string, MachineReference> } | undefined {
  if (!/^[a-z][a-z0-9]*:\/\//.test(value) || /\{%/.test(value) || /\$\{/.test(value.replace(AFTERBURN_VARIABLE, ''))) return undefined;
  const values: Record<string, MachineReference> = {};
  let ok = true;
  const put = (reference: MachineReference): string => {
    values[variableOf(reference)] = reference;
    return `\${${variableOf(reference)}}`;
  };
  // cloudstack:///'{{ ds.meta_data.instance_id }}': the quotes are the template author's, around
  // the value; the ID its cloud controller manager writes has none (as `auto` composes it).
  // proxmox://'${COREOS_CUSTOM_INSTANCE_ID}' reaches the kubelet through systemd, which takes
  // the quotes off when it splits $KUBELET_KUBEADM_ARGS.
  const unquoted = value.replace(/(['"])(\{\{.*?\}\}|\$\{(?:COREOS|AFTERBURN)_[A-Z0-9_]+\})\1/g, '$2');
  const template = unquoted
    .replace(AFTERBURN_VARIABLE, (written: string, name: string) => {
      const reference = SMBIOS_VARIABLES[name];
      if (!reference) ok = false;
      return reference ? put({ fromMachine: reference }) : written;
    })
    .replace(TEMPLATE, (_, written: string) => {
      const expression = V1_ALIASES.has(written) ? `v1.${written}` : written;
      if (!isInstanceDataPath(expression)) ok = false;
      return put({ fromInstanceData: expression });
    });
  return ok && Object.keys(values).length > 0 && !/\{\{|\}\}/.test(template) ? { template, values } : undefined;
}

/** Whether a provider ID takes a value from a Flatcar template's own variable of the VM's SMBIOS UUID. */
export function usesSmbiosVariable(value: string): boolean {
  return [...value.matchAll(AFTERBURN_VARIABLE)].some((m) => Object.hasOwn(SMBIOS_VARIABLES, m[1]!));
}

/** The variable a command reads a machine value from (localHostname: MACHINE_LOCAL_HOSTNAME). */
export function machineVariable(name: MachineReferenceName): string {
  return `MACHINE_${name.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;
}

/** The variable of a reference: MACHINE_LOCAL_HOSTNAME, or INSTANCE_DATA_DS_META_DATA_LABEL for ds.meta_data.label. */
function variableOf(reference: MachineReference): string {
  if ('fromMachine' in reference) return machineVariable(reference.fromMachine);
  return `INSTANCE_DATA_${reference.fromInstanceData.toUpperCase().replace(/[^A-Z0-9]+/g, '_').replace(/^_|_$/g, '')}`;
}

/** Puts a reference under its variable; a problem when another reference took that variable. */
function claim(taken: Record<string, MachineReference>, reference: MachineReference): { name: string } | { problem: string } {
  const name = variableOf(reference);
  const before = taken[name];
  if (before && JSON.stringify(before) !== JSON.stringify(reference)) return { problem: `takes two values under one name (${name})` };
  taken[name] = reference;
  return { name };
}

/** A here-document (<<EOF): its delimiter, whether quoted (<<'EOF', <<"EOF", <<\EOF), and whether <<- (tabs before the delimiter). */
interface HereDocument {
  written: string;
  delimiter: string;
  quoted: boolean;
  tabs: boolean;
}

/** The here-documents of a script read line after line: those a line opened, and the one whose body is being read. */
export interface HereDocuments {
  pending: HereDocument[];
  body?: HereDocument;
}

export function newHereDocuments(): HereDocuments {
  return { pending: [] };
}

// The operator and its word; an unquoted word starts with a letter or _, so that a shift in
// arithmetic ($((1 << 2))) is not taken for one.
const HERE_DOCUMENT = /<<(-?)[ \t]*((?:[A-Za-z_]|'[^'\n]*'|"[^"\n]*"|\\[^\n])(?:[A-Za-z0-9_.-]|'[^'\n]*'|"[^"\n]*"|\\[^\n])*)/y;

/** The here-document an operator at `i` opens (outside quotes), with where its word ends; undefined when none starts there. */
function hereDocumentAt(line: string, i: number): { doc: HereDocument; end: number } | undefined {
  if (!line.startsWith('<<', i) || line[i - 1] === '<' || line[i + 2] === '<') return undefined;
  HERE_DOCUMENT.lastIndex = i;
  const match = HERE_DOCUMENT.exec(line);
  if (!match) return undefined;
  const word = match[2]!;
  const delimiter = [...word.matchAll(/'([^']*)'|"([^"]*)"|\\(.)|([^'"\\])/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? m[4]).join('');
  return { doc: { written: `<<${match[1]}${word}`, delimiter, quoted: /['"\\]/.test(word), tabs: match[1] === '-' }, end: i + match[0].length };
}

/**
 * A line of a here-document's body. Quotes are text there. The shell puts variables into the body
 * of one whose delimiter is unquoted, so a template becomes ${NAME} as it stands; into a quoted
 * one's it puts nothing, and a template there, which cloud-init filled in, is refused.
 */
function hereDocumentLine(raw: string, heredocs: HereDocuments, env: Record<string, MachineReference>): { text: string; problem?: string } {
  const doc = heredocs.body!;
  const bare = raw.endsWith('\n') ? raw.slice(0, -1) : raw;
  if ((doc.tabs ? bare.replace(/^\t+/, '') : bare) === doc.delimiter) {
    heredocs.body = heredocs.pending.shift();
    return { text: raw };
  }
  if (!hasTemplate(raw)) return { text: raw };
  if (doc.quoted) return { text: raw, problem: `holds a template in the body of a here-document whose delimiter is quoted (${doc.written}), where the shell puts in no variable: unquote the delimiter, or write the value` };
  let problem: string | undefined;
  const text = raw.replace(TEMPLATE, (whole, expression: string) => {
    const reference = referenceOf(expression);
    const claimed = reference ? claim(env, reference) : { problem: unknownTemplate(expression) };
    if ('problem' in claimed) problem ??= claimed.problem;
    return 'name' in claimed ? `\${${claimed.name}}` : whole;
  });
  return { text, ...(problem !== undefined ? { problem } : {}) };
}

/**
 * A shell line's templates as variables the command gets from the machine ({{ v1.local_hostname }}
 * becomes ${MACHINE_LOCAL_HOSTNAME}, with env MACHINE_LOCAL_HOSTNAME: { fromMachine: localHostname }).
 * cloud-init put the value in before the shell read the line; the shell now puts it in itself,
 * outside quotes and within double quotes as it is, and within single quotes (where the shell puts
 * in nothing) by ending them around the variable in double quotes: 'a {{ x }} b' is
 * 'a '"${X}"' b', and '{{ x }}' is "${X}". A template machineadm does not know is refused (`problem`),
 * and so is one in the body of a here-document with a quoted delimiter (see hereDocumentLine).
 * `heredocs` carries the here-documents from one line of a script to the next (their bodies
 * follow the line that opens them).
 */
export function shellTemplates(line: string, heredocs: HereDocuments = newHereDocuments()): { text: string; env: Record<string, MachineReference> } | { problem: string } {
  const env: Record<string, MachineReference> = {};
  let text = '';
  let quote: "'" | '"' | undefined;
  // Where the text stood just after the single quote that opened the quote now open.
  let openedAt = -1;
  // The first problem; the line is still read to its end, for the here-documents it opens or ends.
  let problem: string | undefined;
  for (let i = 0; i < line.length; ) {
    if (heredocs.body) {
      const end = line.indexOf('\n', i);
      const next = end === -1 ? line.length : end + 1;
      const body = hereDocumentLine(line.slice(i, next), heredocs, env);
      problem ??= body.problem;
      text += body.text;
      i = next;
      continue;
    }
    const template = line.startsWith('{{', i) ? /^\{\{\s*(.*?)\s*\}\}/.exec(line.slice(i)) : null;
    if (template) {
      const reference = referenceOf(template[1]!);
      const claimed = reference ? claim(env, reference) : { problem: unknownTemplate(template[1]!) };
      i += template[0].length;
      if ('problem' in claimed) {
        problem ??= claimed.problem;
        text += template[0];
        continue;
      }
      if (quote !== "'") {
        text += `\${${claimed.name}}`;
        continue;
      }
      // '{{ x }}' alone becomes "${X}", not ''"${X}"''.
      text = text.length === openedAt ? text.slice(0, -1) : `${text}'`;
      text += `"\${${claimed.name}}"`;
      if (line[i] === "'") {
        quote = undefined;
        i++;
      } else {
        text += "'";
        openedAt = text.length;
      }
      continue;
    }
    const c = line[i]!;
    if (c === '\\' && quote !== "'") {
      text += line.slice(i, i + 2);
      i += 2;
      continue;
    }
    const opened = quote === undefined ? hereDocumentAt(line, i) : undefined;
    if (opened) {
      heredocs.pending.push(opened.doc);
      text += line.slice(i, opened.end);
      i = opened.end;
      continue;
    }
    // The body of the here-documents this line opened begins on the next line.
    if (c === '\n' && quote === undefined && heredocs.pending.length > 0) heredocs.body = heredocs.pending.shift();
    if ((c === "'" || c === '"') && (quote === undefined || quote === c)) quote = quote === undefined ? c : undefined;
    text += c;
    i++;
    if (quote === "'" && c === "'") openedAt = text.length;
  }
  // The next line of the script (the next command of the list) follows this one.
  if (quote === undefined && heredocs.body === undefined) heredocs.body = heredocs.pending.shift();
  if (problem !== undefined) return { problem };
  if (/\{%/.test(line)) return { problem: 'holds a cloud-init template statement ({% ... %})' };
  return { text, env };
}

/**
 * A file's templates as names machineadm puts the machine's values in for ({{ v1.local_hostname }}
 * becomes ${MACHINE_LOCAL_HOSTNAME}, with values: { MACHINE_LOCAL_HOSTNAME: { fromMachine:
 * localHostname } }), as cloud-init rendered them into plain content; one machineadm does not know,
 * a statement, or text that already says ${NAME} of a name it takes is refused (`problem`).
 */
export function fileTemplates(text: string): { text: string; values: Record<string, MachineReference> } | { problem: string } {
  if (/\{%/.test(text)) return { problem: 'holds a cloud-init template statement ({% ... %})' };
  const values: Record<string, MachineReference> = {};
  for (const match of text.matchAll(TEMPLATE)) {
    const reference = referenceOf(match[1]!);
    if (!reference) return { problem: unknownTemplate(match[1]!) };
    const claimed = claim(values, reference);
    if ('problem' in claimed) return claimed;
  }
  const taken = Object.keys(values).find((name) => text.includes(`\${${name}}`));
  if (taken) return { problem: `says \${${taken}} already, the name its template would take` };
  return { text: text.replace(TEMPLATE, (_, expression: string) => `\${${variableOf(referenceOf(expression)!)}}`), values };
}
