// Getting ready to report, before the run changes anything: the endpoints' files (CA, client
// certificate and key) and bearer tokens are read and checked here, so a missing or broken one is
// a configuration error (exit 2) instead of a run that cannot report. Also the machine identity
// events carry, and the secrets of the configuration that must never be printed or sent.
import { windowsRelease } from '../windows/build.ts';
import type { Facts, Host } from '../host/index.ts';
import type { TlsMaterial } from '../host/http-post.ts';
import { displayUrl } from '../host/http.ts';
import type { MachineConfig } from '../config/schema/index.ts';
import { credentialHeaderValues, credentialUrls, secretSources } from '../config/redact.ts';
import { readAtStart, resolveSecret, type SecretScrubber } from '../config/secrets.ts';
import { ConfigError, type ConfigIssue } from '../errors.ts';
import { readPem } from '../config/pem-file.ts';
import { buildInfo } from '../version.ts';
import type { MachineIdentity } from '../engine/events.ts';
import { endpointKey } from './spool.ts';

export interface ResolvedEndpoint {
  url: string;
  /** The URL as every output shows it (displayUrl): a password or query value may be a credential. */
  display: string;
  /** The endpoint's spool directory name. */
  key: string;
  /** Extra headers and Authorization (the bearer token). */
  headers: Record<string, string>;
  tls: TlsMaterial;
  batch: boolean;
}

/** Reads and checks every endpoint's files and token; throws one ConfigError listing every problem. */
export async function resolveEndpoints(config: MachineConfig, host: Host, secrets: SecretScrubber): Promise<ResolvedEndpoint[]> {
  const issues: ConfigIssue[] = [];
  const out: ResolvedEndpoint[] = [];
  const endpoints = config.spec.report.endpoints ?? [];
  for (const [i, endpoint] of endpoints.entries()) {
    const at = `spec.report.endpoints[${i}]`;
    const tls: TlsMaterial = {};
    if (endpoint.caFile) tls.ca = await readPem(host, endpoint.caFile, `${at}.caFile`, 'certificate', issues);
    if (endpoint.clientCertFile) tls.cert = await readPem(host, endpoint.clientCertFile, `${at}.clientCertFile`, 'certificate', issues);
    if (endpoint.clientKeyFile) tls.key = await readPem(host, endpoint.clientKeyFile, `${at}.clientKeyFile`, 'key', issues);
    const headers: Record<string, string> = { ...(endpoint.headers ?? {}) };
    if (endpoint.bearerToken !== undefined) {
      try {
        const token = await resolveSecret(endpoint.bearerToken, host, `${at}.bearerToken`, secrets);
        if (/[\r\n]/.test(token)) issues.push({ path: `${at}.bearerToken`, message: 'the token holds a line break', hint: 'write the token on one line' });
        else headers.Authorization = `Bearer ${token}`;
      } catch (error) {
        if (error instanceof ConfigError) issues.push(...error.issues);
        else throw error;
      }
    }
    out.push({ url: endpoint.url, display: displayUrl(endpoint.url), key: endpointKey(endpoint.url), headers, tls, batch: endpoint.batch ?? false });
  }
  if (issues.length) throw new ConfigError(issues);
  return out;
}

/**
 * Registers every secret of the configuration with the scrubber before the run starts, so a value
 * that surfaces in a command's output or an error is scrubbed even when no step read it through
 * ctx.secret. References that cannot be read now are left to the step that needs them. What URLs
 * hold (a proxy's password, a presigned query) is registered too, for any output that forgets
 * displayUrl.
 */
export async function registerConfigSecrets(config: MachineConfig, host: Host, secrets: SecretScrubber): Promise<void> {
  for (const url of credentialUrls(config)) secrets.addUrl(url);
  for (const value of credentialHeaderValues(config)) secrets.add(value);
  for (const source of secretSources(config)) {
    if (typeof source === 'string') secrets.add(source);
    // A store or an envelope is read by the step that needs it, and registered then.
    else if (readAtStart(source)) await resolveSecret(source, host, '(secret)', secrets).catch(() => undefined);
  }
}

// cloud-init keeps the instance id of the metadata it used here (also under a scratch --root).
const CLOUD_INIT_INSTANCE_ID = '/var/lib/cloud/data/instance-id';

/**
 * Who the events are about. The instance id is the metadata service's when machineadm read
 * instance metadata itself (`fromMetadata`), else the one cloud-init recorded.
 */
export async function machineIdentity(config: MachineConfig, facts: Facts, host: Host, fromMetadata?: string, machineValues: MachineIdentity['machineValues'] = []): Promise<MachineIdentity> {
  const instanceId =
    fromMetadata ?? (facts.os === 'linux' && host.fs.platform === 'linux' ? (await host.fs.readText(CLOUD_INIT_INSTANCE_ID).catch(() => undefined))?.trim() : undefined);
  const name = config.spec.kubernetes?.node?.name;
  const nodeName = typeof name === 'string' ? name : facts.hostname.toLowerCase();
  return {
    hostname: facts.hostname,
    nodeName,
    ...(instanceId && instanceId !== 'iid-datasource-none' ? { instanceId } : {}),
    ...(machineValues.length > 0 ? { machineValues } : {}),
    machineadmVersion: buildInfo.version,
    os: facts.os,
    arch: facts.arch,
    ...(facts.os === 'windows' && facts.windowsBuild ? { windowsBuild: facts.windowsBuild } : {}),
    ...(facts.os === 'windows' && windowsRelease(facts.windowsBuild) ? { windowsRelease: windowsRelease(facts.windowsBuild)! } : {}),
  };
}
