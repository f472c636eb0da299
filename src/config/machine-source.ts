// Where a fleet configuration's machine values come from, in order: given by the operator (--set,
// or a facts file's "machine" map for plan), the instance metadata of the cloud this machine runs
// in, and on bare metal (no metadata service) the machine's own facts: its hostname and the DMI
// product UUID. Values are read only when the configuration references them, and all before the
// first change of a run.
import type { ConfigHost } from '../host/config-host.ts';
import { ConfigError } from '../errors.ts';
import { detectCloud, CLOUDS, ImdsError, type Cloud } from './imds.ts';
import { readInstanceValues, type InstanceValues } from './instance-values.ts';
import { applyMachineValues, referencedValues, type ResolvedMachineValue } from './machine-values.ts';
import type { MachineConfig } from './schema/index.ts';
import { applyEnvValues } from './env-values.ts';

const DMI_PRODUCT_UUID = '/sys/class/dmi/id/product_uuid';

export interface MachineValueInput {
  /** Values the operator gave; they win over anything read. */
  given: InstanceValues;
  /** Planning for another machine (plan --facts): only given values count, nothing is read here. */
  otherMachine: boolean;
}

export async function resolveMachineValues(host: ConfigHost, given: MachineConfig, input: MachineValueInput): Promise<{ config: MachineConfig; resolved: ResolvedMachineValue[] }> {
  // The launcher's environment is as much this machine's as its metadata.
  const config = applyEnvValues(given, host.env).config;
  const needed = referencedValues(config);
  if (needed.length === 0) return { config, resolved: [] };
  let values: InstanceValues = { ...input.given };
  if (!input.otherMachine && needed.some((name) => values[name] === undefined)) {
    try {
      values = { ...(await readMachine(host, values.cloud?.value)), ...values };
    } catch (error) {
      if (!(error instanceof ImdsError)) throw error;
      throw new ConfigError([{ path: 'spec.kubernetes.node', message: `cannot read ${needed.join(', ')} from the machine: ${error.message}`, hint: error.hint ?? 'give the values with --set NAME=VALUE' }], { cause: error });
    }
  }
  const hint = input.otherMachine
    ? 'add "NAME" to the "machine" map of the --facts file, or give --set NAME=VALUE'
    : 'give it with --set NAME=VALUE where the machine has no such value';
  return applyMachineValues(config, values, hint);
}

async function readMachine(host: ConfigHost, namedCloud: string | undefined): Promise<InstanceValues> {
  let cloud: Cloud | undefined = (CLOUDS as readonly string[]).includes(namedCloud ?? '') ? (namedCloud as Cloud) : undefined;
  if (cloud === undefined && namedCloud === undefined) {
    try {
      cloud = await detectCloud(host, { maxBytes: 64 * 1024 });
    } catch (error) {
      if (!(error instanceof ImdsError)) throw error;
    }
  }
  if (cloud !== undefined) return readInstanceValues(host, cloud, {});
  // Bare metal: no metadata service answered (or the operator named no known cloud).
  const facts = await host.facts();
  const values: InstanceValues = { localHostname: { value: facts.hostname, source: 'the machine\'s hostname' } };
  const uuid = host.fs.platform === 'linux' ? (await host.fs.readText(DMI_PRODUCT_UUID).catch(() => undefined))?.trim() : undefined;
  if (uuid) values.instanceId = { value: uuid, source: DMI_PRODUCT_UUID };
  return values;
}
