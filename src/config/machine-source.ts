// Where a fleet configuration's machine values come from, in order: given by the operator (--set,
// or a facts file's "machine" map for plan), the instance metadata of the cloud this machine runs
// in, and on bare metal (no metadata service) the machine's own facts: its hostname and the DMI
// product UUID. A key of cloud-init's instance data comes from the file cloud-init wrote. Values
// are read only when the configuration references them, and all before the first change of a run.
import type { ConfigHost } from '../host/config-host.ts';
import { ConfigError, MachineValuesUnavailableError, UsageError } from '../errors.ts';
import type { HttpTimeouts, RetryPolicy } from '../host/http.ts';
import { CLOUDS, ImdsError, probeClouds, readDmi, type Cloud } from './imds.ts';
import { readInstanceValues, type InstanceValues } from './instance-values.ts';
import { applyMachineValues, referencedValues, type ResolvedMachineValue } from './machine-values.ts';
import type { MachineConfig } from './schema/index.ts';
import { applyEnvValues } from './env-values.ts';
import { readInstanceData } from './instance-data.ts';
import { givenKeyNames, isInstanceDataPath } from './machine-names.ts';

const DMI_PRODUCT_UUID = '/sys/class/dmi/id/product_uuid';

/** What `--set cloud=` (and a facts file's `cloud`) may name: a cloud, or bare metal (read no metadata service). */
export const BARE_METAL = 'bare-metal';
export const KNOWN_CLOUD_NAMES: readonly string[] = [...CLOUDS, BARE_METAL];

// A machine whose firmware names a maker of physical machines asks the metadata services once,
// briefly (a cloud whose firmware machineadm does not recognise still answers in well under a
// second on its own network), instead of with a booting cloud machine's patience.
const BARE_METAL_PROBE = { retry: { attempts: 1 }, timeouts: { connectMs: 250, responseMs: 500, totalMs: 600 }, roundDeadlineMs: 800 };

export interface MachineValueInput {
  /** Values the operator gave; they win over anything read. */
  given: InstanceValues;
  /** Planning for another machine (plan --facts): only given values count, nothing is read here. */
  otherMachine: boolean;
  /** Retry and timeout settings for the metadata services (default: a booting machine's patience). */
  imds?: { retry?: Partial<RetryPolicy>; timeouts?: Partial<HttpTimeouts> };
  /**
   * Fill only what `given` has, leave every other reference as written, and a variable of the
   * launcher's environment that is missing or unfit too (reset: it reads nothing of the machine,
   * and undoing needs no API server endpoint). A given value unfit for its field is still refused.
   */
  givenOnly?: boolean;
}

export async function resolveMachineValues(host: ConfigHost, given: MachineConfig, input: MachineValueInput): Promise<{ config: MachineConfig; resolved: ResolvedMachineValue[] }> {
  // The launcher's environment is as much this machine's as its metadata.
  const config = input.givenOnly ? envValuesIfAny(given, host.env) : applyEnvValues(given, host.env).config;
  const needed = referencedValues(config);
  if (needed.length === 0) return { config, resolved: [] };
  let values: InstanceValues = { ...input.given };
  // A key given in another spelling than the reference's is the same key.
  for (const name of needed) {
    if (!isInstanceDataPath(name) || values[name] !== undefined) continue;
    const given = Object.keys(input.given).find((g) => isInstanceDataPath(g) && givenKeyNames(g, name));
    if (given !== undefined) values[name] = input.given[given]!;
  }
  const fromInstanceData = needed.filter((name) => isInstanceDataPath(name) && values[name] === undefined);
  const fromMetadata = needed.filter((name) => !isInstanceDataPath(name));
  if (input.givenOnly) return applyMachineValues(config, values, 'give it with --set NAME=VALUE', { keepMissing: true });
  if (!input.otherMachine && fromInstanceData.length > 0) values = { ...(await readInstanceData(host, fromInstanceData)), ...values };
  if (!input.otherMachine && fromMetadata.some((name) => values[name] === undefined)) {
    values = { ...(await readMachine(host, values.cloud?.value, fromMetadata, input.imds ?? {})), ...values };
  }
  const hint = input.otherMachine
    ? 'add "NAME" to the "machine" map of the --facts file, or give --set NAME=VALUE'
    : 'give it with --set NAME=VALUE where the machine has no such value';
  return applyMachineValues(config, values, hint);
}

function envValuesIfAny(config: MachineConfig, env: Readonly<Record<string, string | undefined>>): MachineConfig {
  try {
    return applyEnvValues(config, env).config;
  } catch (error) {
    if (error instanceof ConfigError) return config;
    throw error;
  }
}

async function readMachine(host: ConfigHost, namedCloud: string | undefined, needed: string[], imds: NonNullable<MachineValueInput['imds']>): Promise<InstanceValues> {
  const wanted = needed.join(', ');
  if (namedCloud === BARE_METAL) return bareMetalValues(host, '--set cloud=bare-metal');
  if (namedCloud !== undefined) {
    // The command line refuses other names; a library caller gets the same word.
    if (!(CLOUDS as readonly string[]).includes(namedCloud)) throw new MachineValuesUnavailableError(`cloud "${namedCloud}" is not one machineadm knows`, { hint: `name one of ${KNOWN_CLOUD_NAMES.join(', ')}` });
    if (host.offline) throw offlineRefusal(wanted, `the cloud named by --set cloud=${namedCloud}`);
    return cloudValues(host, namedCloud as Cloud, wanted, `the cloud named by --set cloud=${namedCloud}`, imds);
  }
  const dmi = await readDmi(host);
  if (host.offline) {
    // Bare metal's own values need no network; anywhere else only a metadata service has them,
    // and waiting out its retries for requests --offline never sends would tell the operator nothing.
    if (dmi.bareMetal) return bareMetalValues(host, `bare metal: DMI ${dmi.evidence} names no cloud; no metadata service asked: --offline`);
    throw offlineRefusal(wanted, dmi.cloud ? `the firmware (DMI ${dmi.evidence}) names ${dmi.cloud}` : `the firmware (DMI: ${dmi.evidence}) names no cloud`);
  }
  if (dmi.cloud) return cloudValues(host, dmi.cloud, wanted, `the firmware (DMI ${dmi.evidence}) names ${dmi.cloud}`, imds);
  const found = await probeClouds(host, { ...(dmi.bareMetal ? BARE_METAL_PROBE : { retry: imds.retry ?? {}, timeouts: imds.timeouts ?? {} }), maxBytes: 64 * 1024 });
  if (found.cloud) return cloudValues(host, found.cloud, wanted, `the ${found.cloud} metadata service answered`, imds);
  if (dmi.bareMetal) return bareMetalValues(host, `bare metal: DMI ${dmi.evidence} names no cloud, and no metadata service answered`);
  if (found.noneIsMetadata) return bareMetalValues(host, 'bare metal: every metadata address answered, none as AWS, Azure or GCE');
  // Neither the firmware nor a metadata service says where this machine is: taking the OS
  // hostname here would join a cloud machine under the wrong name.
  throw new MachineValuesUnavailableError(
    `cannot read ${wanted} from the machine: its firmware (DMI: ${dmi.evidence}) names no cloud and no metadata service (AWS, Azure, GCE) answered within ${Math.round(found.elapsedMs / 1000)} s; nothing was changed`,
    { hint: `in a cloud, run again once its metadata service answers (or name it: --set cloud=aws|azure|gce); on bare metal, say so with --set cloud=${BARE_METAL}; or give the values with --set NAME=VALUE` },
  );
}

function offlineRefusal(wanted: string, why: string): UsageError {
  return new UsageError(`--offline: cannot read ${wanted} from the machine without asking a metadata service (${why}); nothing was changed`, {
    hint: `give the values with --set NAME=VALUE (outside a cloud: --set cloud=${BARE_METAL}, the hostname and DMI product UUID), or run without --offline`,
  });
}

async function cloudValues(host: ConfigHost, cloud: Cloud, wanted: string, why: string, imds: NonNullable<MachineValueInput['imds']>): Promise<InstanceValues> {
  try {
    return await readInstanceValues(host, cloud, imds);
  } catch (error) {
    if (!(error instanceof ImdsError)) throw error;
    throw new MachineValuesUnavailableError(`cannot read ${wanted} from the machine (${why}): ${error.message}; nothing was changed`, {
      hint: `run again once the metadata service answers${error.hint ? ` (${error.hint})` : ''}, or give the values with --set NAME=VALUE`,
      cause: error,
    });
  }
}

/** Bare metal: the hostname and the DMI product UUID, each source saying why no cloud gave it. */
async function bareMetalValues(host: ConfigHost, why: string): Promise<InstanceValues> {
  const facts = await host.facts();
  const values: InstanceValues = { localHostname: { value: facts.hostname, source: `the machine's hostname (${why})` } };
  const uuid = host.fs.platform === 'linux' ? (await host.fs.readText(DMI_PRODUCT_UUID).catch(() => undefined))?.trim() : undefined;
  if (uuid) values.instanceId = { value: uuid, source: DMI_PRODUCT_UUID };
  return values;
}
