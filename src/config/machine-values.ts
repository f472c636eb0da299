// Replaces every `{ fromMachine: NAME }`, `{ fromInstanceData: KEY }`, `providerID: auto` and
// provider ID template in a configuration with this machine's value, checked for the place it
// goes. Pure: the values were read before (instance metadata, cloud-init's instance data, machine
// facts, --set, a facts file); a missing or unfit value is a ConfigError naming the field and the
// value's source, so nothing has changed when it is found.
import { ConfigError, type ConfigIssue } from '../errors.ts';
import type { MachineConfig } from './schema/index.ts';
import { labelValueProblem, nodeIpProblem, nodeNameProblem, providerIdPartProblem, providerIdProblem } from './schema/kubernetes.ts';
import { describeReference, fillValues, isMachineReference, referenceName, type MachineString } from './schema/machine.ts';
import type { InstanceValues } from './instance-values.ts';
import { composeProviderId } from './provider-id.ts';
import { ipFamily } from './schema/ip.ts';

/** One field that took its value from the machine, as plan and the report show it. */
export interface ResolvedMachineValue {
  field: string;
  /** The reference as written: a reference name, an instance-data key, or "providerID: auto". */
  reference: string;
  value: string;
  source: string;
}

interface Site {
  field: string;
  /** The value's name in InstanceValues: a reference's name, an instance-data key, or providerID. */
  name: string;
  /** As the configuration writes it, for messages. */
  written: string;
  check: (value: string) => string | undefined;
  assign: (config: MachineConfig, value: string) => void;
}

function machineNodeNameProblem(value: string): string | undefined {
  if (value !== value.toLowerCase()) return 'is not lower case (Kubernetes node names are lower-case DNS names)';
  // The value is shown before the problem already; the hint is the field's own.
  return nodeNameProblem(value)?.replace(/^".*?" /, '').split('|')[0];
}

function sites(config: MachineConfig): Site[] {
  const out: Site[] = [];
  const ref = (value: MachineString | undefined) => (isMachineReference(value) ? { name: referenceName(value), written: describeReference(value) } : undefined);
  for (const [list, commands] of Object.entries(config.spec.commands ?? {})) {
    (commands ?? []).forEach((command, i) => {
      for (const [key, value] of Object.entries(command.env ?? {})) {
        const r = ref(value);
        if (r) out.push({ field: `spec.commands.${list}[${i}].env.${key}`, ...r, check: () => undefined, assign: (c, v) => (((c.spec.commands as Record<string, typeof commands>)[list]![i]!.env as Record<string, MachineString>)[key] = v) });
      }
    });
  }
  (config.spec.files ?? []).forEach((file, i) => {
    for (const [key, value] of Object.entries(file.values ?? {})) {
      const r = ref(value);
      if (r) out.push({ field: `spec.files[${i}].values.${key}`, ...r, check: () => undefined, assign: (c, v) => (c.spec.files![i]!.values![key] = v) });
    }
  });
  const node = config.spec.kubernetes?.node;
  if (!node) return out;
  const name = ref(node.name);
  if (name) out.push({ field: 'spec.kubernetes.node.name', ...name, check: machineNodeNameProblem, assign: (c, v) => (c.spec.kubernetes!.node!.name = v) });
  const providerID = node.providerID;
  if (providerID === 'auto') out.push({ field: 'spec.kubernetes.node.providerID', name: 'providerID', written: 'providerID: auto', check: (v) => (v === 'auto' ? 'is not a provider ID' : providerIdProblem(v)), assign: (c, v) => (c.spec.kubernetes!.node!.providerID = v) });
  if (typeof providerID === 'object') {
    for (const [key, value] of Object.entries(providerID.values)) {
      const r = ref(value);
      if (r) out.push({ field: `spec.kubernetes.node.providerID.values.${key}`, ...r, check: providerIdPartProblem, assign: (c, v) => ((c.spec.kubernetes!.node!.providerID as typeof providerID).values[key] = v) });
    }
  }
  node.ip?.forEach((value, i) => {
    const ip = ref(value);
    if (ip) out.push({ field: `spec.kubernetes.node.ip[${i}]`, ...ip, check: nodeIpProblem, assign: (c, v) => (c.spec.kubernetes!.node!.ip![i] = v) });
  });
  for (const [key, value] of Object.entries(node.labels ?? {})) {
    const label = ref(value);
    if (label) out.push({ field: `spec.kubernetes.node.labels["${key}"]`, ...label, check: labelValueProblem, assign: (c, v) => (c.spec.kubernetes!.node!.labels![key] = v) });
  }
  return out;
}

/** The value names this configuration references (empty: nothing to read from the machine). */
export function referencedValues(config: MachineConfig): string[] {
  return [...new Set(sites(config).map((s) => s.name))];
}

// Whatever a value is used for, it is one printable word that cannot pass for a flag.
function anyValueProblem(value: string): string | undefined {
  if (value.startsWith('-')) return 'starts with "-"';
  if (!/^[\x21-\x7e]+$/.test(value)) return 'is not one word of printable ASCII (white space, control characters or non-ASCII)';
  return undefined;
}

const shown = (value: string) => JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);

/**
 * keepMissing: a field whose value was not given keeps its reference instead of being a problem
 * (reset, which asks the machine for nothing: only the fields it gives values for are filled).
 */
export function applyMachineValues(config: MachineConfig, values: InstanceValues, hint: string, { keepMissing = false } = {}): { config: MachineConfig; resolved: ResolvedMachineValue[] } {
  const found = sites(config);
  if (found.length === 0) return { config, resolved: [] };
  const out = structuredClone(config);
  const issues: ConfigIssue[] = [];
  const resolved: ResolvedMachineValue[] = [];
  for (const site of found) {
    let value = values[site.name];
    if (site.name === 'providerID' && value === undefined) {
      const composed = composeProviderId(values);
      if ('problem' in composed) {
        if (keepMissing) continue;
        issues.push({ path: site.field, message: `auto: ${composed.problem}`, hint: 'write the provider ID itself, or give it with --set providerID=...' });
        continue;
      }
      value = composed.ok;
    }
    if (value === undefined) {
      if (keepMissing) continue;
      issues.push({ path: site.field, message: `${site.written}: this machine gave no ${site.name}`, hint: hint.replaceAll('NAME', site.name) });
      continue;
    }
    const problem = anyValueProblem(value.value) ?? site.check(value.value);
    if (problem) {
      issues.push({ path: site.field, message: `${site.name} from ${value.source} ${shown(value.value)} ${problem}`, hint: `fix the value at its source, or give it with --set ${site.name}=...` });
      continue;
    }
    site.assign(out, value.value);
    resolved.push({ field: site.field, reference: site.name === 'providerID' ? 'providerID: auto' : site.name, value: value.value, source: value.source });
  }
  const template = out.spec.kubernetes?.node?.providerID;
  if (issues.length === 0 && typeof template === 'object' && Object.values(template.values).every((v) => typeof v === 'string')) {
    const id = fillValues(template.template, template.values, 'spec.kubernetes.node.providerID.values');
    const problem = providerIdProblem(id);
    if (problem) issues.push({ path: 'spec.kubernetes.node.providerID', message: `${shown(id)} ${problem.split('|')[0]}`, hint: 'fix the template or its values' });
    else {
      out.spec.kubernetes!.node!.providerID = id;
      resolved.push({ field: 'spec.kubernetes.node.providerID', reference: 'providerID: template', value: id, source: 'spec.kubernetes.node.providerID.values' });
    }
  }
  // The schema checks two literal addresses; with a value of the machine, only now can it be told.
  const ips = out.spec.kubernetes?.node?.ip;
  if (issues.length === 0 && ips?.length === 2 && ips.every((ip) => typeof ip === 'string') && ipFamily(ips[0] as string) === ipFamily(ips[1] as string)) {
    issues.push({ path: 'spec.kubernetes.node.ip', message: `${ips.join(' and ')}: two addresses must be one IPv4 and one IPv6 (dual stack)`, hint: 'give one address, or one of each family' });
  }
  if (issues.length > 0) throw new ConfigError(issues);
  return { config: out, resolved };
}
