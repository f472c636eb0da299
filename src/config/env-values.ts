// Replaces each `{ valueFrom: { env: NAME } }` of a non-secret field with the variable's value,
// checked as the literal would be. Secrets keep their references (read when a step needs them);
// these values are shown in plans and records, like any literal.
import { ConfigError, type ConfigIssue } from '../errors.ts';
import type { MachineConfig } from './schema/index.ts';
import { endpointProblem } from './schema/kubernetes.ts';
import { isEnvReference } from './schema/machine.ts';

export interface ResolvedEnvValue {
  field: string;
  env: string;
  value: string;
}

export function applyEnvValues(config: MachineConfig, env: Readonly<Record<string, string | undefined>>): { config: MachineConfig; resolved: ResolvedEnvValue[] } {
  const endpoint = config.spec.kubernetes?.controlPlaneEndpoint;
  if (!isEnvReference(endpoint)) return { config, resolved: [] };
  const field = 'spec.kubernetes.controlPlaneEndpoint';
  const name = endpoint.valueFrom.env;
  const value = env[name];
  const issues: ConfigIssue[] = [];
  if (value === undefined || value === '') {
    issues.push({ path: field, message: `{ valueFrom: { env: ${name} } }: ${name} is not set`, hint: `set ${name} to host:port of the API server before machineadm runs (Cluster API's bootstrap data does)` });
  } else {
    const problem = endpointProblem(value);
    if (problem) {
      const [message = problem, hint] = problem.split('|');
      issues.push({ path: field, message: `${name} ${JSON.stringify(value.slice(0, 80))} ${message}`, ...(hint ? { hint } : {}) });
    }
  }
  if (issues.length > 0) throw new ConfigError(issues);
  const out = structuredClone(config);
  out.spec.kubernetes!.controlPlaneEndpoint = value!;
  return { config: out, resolved: [{ field, env: name, value: value! }] };
}
