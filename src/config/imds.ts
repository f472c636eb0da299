// Instance metadata user data for AWS (IMDSv2), Azure (IMDS userData) and GCE (metadata server).
// Metadata services are flaky while a machine boots (connection refused, slow answers, 5xx), so
// every request retries with backoff until a deadline; a 404 means "no user data", not an error.
// MACHINEADM_IMDS_ENDPOINT replaces the base URL of every cloud (tests, private clouds).
import type { ConfigHost } from '../host/config-host.ts';
import { HttpError, httpRequest, isRetryableStatus, retryDelayMs, type RetryPolicy, type HttpTimeouts } from '../host/http.ts';

export const CLOUDS = ['aws', 'azure', 'gce'] as const;
export type Cloud = (typeof CLOUDS)[number];

export const IMDS_ENDPOINT_ENV = 'MACHINEADM_IMDS_ENDPOINT';

const DEFAULT_BASE: Record<Cloud, string> = {
  aws: 'http://169.254.169.254',
  azure: 'http://169.254.169.254',
  gce: 'http://metadata.google.internal',
};

export interface ImdsOptions {
  retry?: Partial<RetryPolicy>;
  timeouts?: Partial<HttpTimeouts>;
  maxBytes: number;
}

// Boot-time patience: a metadata service may take tens of seconds to answer after the network is up.
export const IMDS_RETRY: RetryPolicy = { attempts: 10, baseDelayMs: 250, maxDelayMs: 5_000, deadlineMs: 60_000 };
export const IMDS_TIMEOUTS: HttpTimeouts = { connectMs: 2_000, responseMs: 5_000, totalMs: 30_000 };

export class ImdsError extends Error {
  readonly hint: string | undefined;
  constructor(message: string, hint?: string, options?: { cause?: unknown }) {
    super(message, options);
    this.hint = hint;
  }
}

export function baseUrl(host: ConfigHost, cloud: Cloud): string {
  return (host.env[IMDS_ENDPOINT_ENV] || DEFAULT_BASE[cloud]).replace(/\/+$/, '');
}

export function imdsRequest(host: ConfigHost, options: ImdsOptions, url: string, extra: { method?: 'GET' | 'PUT'; headers: Record<string, string>; acceptStatus?: number[] }) {
  return httpRequest({
    url,
    method: extra.method ?? 'GET',
    headers: extra.headers,
    offline: host.offline,
    sleep: (ms) => host.sleep(ms),
    maxBytes: options.maxBytes,
    retry: { ...IMDS_RETRY, ...options.retry },
    timeouts: { ...IMDS_TIMEOUTS, ...options.timeouts },
    ...(extra.acceptStatus ? { acceptStatus: extra.acceptStatus } : {}),
    // Metadata services never redirect; following one would hand the token header to another host.
    followRedirects: false,
  });
}

export interface InstanceMetadata {
  /** The raw user data, or undefined when the instance has none. */
  userData: Buffer | undefined;
  /** The instance's id as its cloud names it (AWS instance-id, Azure vmId, GCE instance id), when it answers one. */
  instanceId: string | undefined;
}

// The instance id is extra: the service has just answered, so a short try is enough, and without
// an id the report falls back to cloud-init's record.
const INSTANCE_ID_RETRY: Partial<RetryPolicy> = { attempts: 3, deadlineMs: 5_000 };

async function instanceIdAt(host: ConfigHost, options: ImdsOptions, url: string, headers: Record<string, string>, flavor?: string): Promise<string | undefined> {
  try {
    const answer = await imdsRequest(host, { ...options, maxBytes: 1024, retry: { ...options.retry, ...INSTANCE_ID_RETRY } }, url, { headers, acceptStatus: [404] });
    if (flavor !== undefined && answer.headers['metadata-flavor'] !== flavor) return undefined;
    const id = answer.status === 200 ? answer.body.toString('utf8').trim() : '';
    // An id is one printable token; anything else is not what the service should have answered.
    return /^[\x21-\x7e]{1,128}$/.test(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

/** The instance's user data and id, from its cloud's metadata service. */
export async function readInstanceMetadata(host: ConfigHost, cloud: Cloud, options: ImdsOptions): Promise<InstanceMetadata> {
  const base = baseUrl(host, cloud);
  try {
    switch (cloud) {
      case 'aws': {
        // IMDSv2: a session token first (PUT), then the data with the token.
        const token = await imdsRequest(host, options, `${base}/latest/api/token`, { method: 'PUT', headers: { 'X-aws-ec2-metadata-token-ttl-seconds': '300' } });
        const value = token.body.toString('utf8').trim();
        if (!value) throw new ImdsError('AWS IMDS returned an empty session token', 'check the instance metadata options (IMDSv2)');
        const headers = { 'X-aws-ec2-metadata-token': value };
        const data = await imdsRequest(host, options, `${base}/latest/user-data`, { headers, acceptStatus: [404] });
        const instanceId = await instanceIdAt(host, options, `${base}/latest/meta-data/instance-id`, headers);
        return { userData: data.status === 404 || data.body.length === 0 ? undefined : data.body, instanceId };
      }
      case 'azure': {
        const headers = { Metadata: 'true' };
        const data = await imdsRequest(host, options, `${base}/metadata/instance/compute/userData?api-version=2021-01-01&format=text`, { headers, acceptStatus: [404] });
        const instanceId = await instanceIdAt(host, options, `${base}/metadata/instance/compute/vmId?api-version=2021-01-01&format=text`, headers);
        if (data.status === 404) return { userData: undefined, instanceId };
        // Azure hands userData out base64-encoded.
        const text = data.body.toString('latin1').replace(/\s+/g, '');
        if (text === '') return { userData: undefined, instanceId };
        if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text)) throw new ImdsError('Azure IMDS userData is not base64', 'set the VM userData again (Azure stores it base64-encoded)');
        return { userData: Buffer.from(text, 'base64'), instanceId };
      }
      case 'gce': {
        const headers = { 'Metadata-Flavor': 'Google' };
        const data = await imdsRequest(host, options, `${base}/computeMetadata/v1/instance/attributes/user-data`, { headers, acceptStatus: [404] });
        if (data.status !== 404 && data.headers['metadata-flavor'] !== 'Google') throw new ImdsError('the GCE metadata server answer lacks "Metadata-Flavor: Google"', 'something other than the metadata server answered; check the network');
        const instanceId = await instanceIdAt(host, options, `${base}/computeMetadata/v1/instance/id`, headers, 'Google');
        return { userData: data.status === 404 || data.body.length === 0 ? undefined : data.body, instanceId };
      }
    }
  } catch (error) {
    if (error instanceof ImdsError) throw error;
    if (error instanceof HttpError) throw new ImdsError(`${cloud} instance metadata: ${error.message}`, error.hint, { cause: error });
    throw error;
  }
}

/**
 * Which cloud this is: first from the firmware's DMI strings (no network), then by asking each
 * metadata protocol (the first that answers in its own way wins).
 */
export async function detectCloud(host: ConfigHost, options: ImdsOptions): Promise<Cloud> {
  const fromDmi = (await readDmi(host)).cloud;
  if (fromDmi) return fromDmi;
  const found = await probeClouds(host, { retry: options.retry ?? {}, timeouts: options.timeouts ?? {}, maxBytes: options.maxBytes });
  if (found.cloud) return found.cloud;
  throw new ImdsError('cannot tell which cloud this machine runs in (no metadata service answered like AWS, Azure or GCE)', 'name the cloud: imds://aws/user-data, imds://azure/user-data or imds://gce/user-data');
}

export interface ProbeResult {
  cloud?: Cloud;
  /** Every protocol got an answer, and none was a metadata service's: no waiting changes that. */
  noneIsMetadata: boolean;
  elapsedMs: number;
}

/** Asks every cloud's metadata protocol at once, round after round within the retry policy. */
export async function probeClouds(host: ConfigHost, options: { retry: Partial<RetryPolicy>; timeouts: Partial<HttpTimeouts>; maxBytes: number; roundDeadlineMs?: number }): Promise<ProbeResult> {
  const policy: RetryPolicy = { ...IMDS_RETRY, ...options.retry };
  // Elapsed on the process's clock: a boot's first time sync may set the wall clock meanwhile.
  const started = performance.now();
  const once: Partial<HttpTimeouts> = { ...IMDS_TIMEOUTS, ...options.timeouts };
  // A round's own bound, over everything the requests cost (a first request also loads the HTTP
  // client): a request still open then counts as unanswered.
  const bounded = (answer: Promise<'yes' | 'no' | 'unreachable'>): Promise<'yes' | 'no' | 'unreachable'> =>
    options.roundDeadlineMs === undefined ? answer : Promise.race([answer, new Promise<'unreachable'>((done) => setTimeout(() => done('unreachable'), options.roundDeadlineMs).unref())]);
  for (let round = 1; ; round++) {
    const answers = await Promise.all(CLOUDS.map((cloud) => bounded(probe(host, cloud, once, options.maxBytes))));
    const found = CLOUDS.find((_, i) => answers[i] === 'yes');
    if (found) return { cloud: found, noneIsMetadata: false, elapsedMs: Math.round(performance.now() - started) };
    const allAnswered = answers.every((a) => a === 'no');
    const wait = retryDelayMs(round, policy);
    if (allAnswered || round >= policy.attempts || (policy.deadlineMs !== undefined && performance.now() - started + wait > policy.deadlineMs)) {
      return { noneIsMetadata: allAnswered, elapsedMs: Math.round(performance.now() - started) };
    }
    await host.sleep(wait);
  }
}

/**
 * Azure answers with the whole instance document: every tag twice (tags, tagsList), the SSH keys,
 * disks and interfaces. A tagged VM's is tens of KiB (50 tags of up to 512 + 256 characters).
 */
export const AZURE_DOCUMENT_MAX_BYTES = 1024 * 1024;

async function probe(host: ConfigHost, cloud: Cloud, timeouts: Partial<HttpTimeouts>, maxBytes: number): Promise<'yes' | 'no' | 'unreachable'> {
  const base = baseUrl(host, cloud);
  const one = { offline: host.offline, sleep: (ms: number) => host.sleep(ms), retry: { attempts: 1 }, timeouts, maxBytes, acceptStatus: [400, 401, 403, 404, 405], followRedirects: false };
  try {
    if (cloud === 'aws') {
      const r = await httpRequest({ ...one, url: `${base}/latest/api/token`, method: 'PUT', headers: { 'X-aws-ec2-metadata-token-ttl-seconds': '60' } });
      return r.status === 200 && r.body.length > 0 ? 'yes' : 'no';
    }
    if (cloud === 'azure') {
      const r = await httpRequest({ ...one, maxBytes: Math.max(maxBytes, AZURE_DOCUMENT_MAX_BYTES), url: `${base}/metadata/instance?api-version=2021-01-01`, headers: { Metadata: 'true' } });
      return r.status === 200 && /"compute"/.test(r.body.toString('utf8')) ? 'yes' : 'no';
    }
    const r = await httpRequest({ ...one, url: `${base}/computeMetadata/v1/`, headers: { 'Metadata-Flavor': 'Google' } });
    return r.status === 200 && r.headers['metadata-flavor'] === 'Google' ? 'yes' : 'no';
  } catch (error) {
    // A 503 or 429 is a metadata service still starting: ask again, as for one that does not answer yet.
    if (error instanceof HttpError && error.reason === 'status' && !isRetryableStatus(error.status ?? 0)) return 'no';
    return 'unreachable';
  }
}

const AZURE_ASSET_TAG = '7783-7084-3265-9085-8269-3286-77';
// Hypervisors and clouds machineadm has no metadata protocol for: a machine whose DMI names one
// is a virtual machine somewhere, not bare metal, so an unanswering metadata service is an
// outage to report, never a reason to take the hostname.
const VIRTUAL_PLATFORM = /qemu|kvm|xen|vmware|virtualbox|innotek|bochs|openstack|parallels|bhyve|nutanix|red hat|ovirt|cloudstack|hetzner|digitalocean|alibaba|tencent|linode|vultr|scaleway|equinix|microsoft corporation/i;

export interface DmiReading {
  /** The cloud the firmware names. */
  cloud?: Cloud;
  /** The firmware names a maker of physical machines (no hypervisor, no cloud). */
  bareMetal: boolean;
  /** What the firmware said, for messages: `sys_vendor "Dell Inc.", product_name "PowerEdge R650"`. */
  evidence: string;
}

/** What the firmware's DMI strings say about where this machine runs (Linux; no network). */
export async function readDmi(host: ConfigHost): Promise<DmiReading> {
  if (host.fs.platform !== 'linux') return { bareMetal: false, evidence: 'no DMI strings read on this platform' };
  const read = async (path: string) => ((await host.fs.readText(path).catch(() => undefined)) ?? '').trim();
  const dmi = (name: string) => read(`/sys/class/dmi/id/${name}`);
  const [vendor, product, version, bios, biosVersion, asset, uuid, serial, xenUuid] = await Promise.all([
    dmi('sys_vendor'),
    dmi('product_name'),
    dmi('product_version'),
    dmi('bios_vendor'),
    dmi('bios_version'),
    dmi('chassis_asset_tag'),
    dmi('product_uuid'),
    dmi('product_serial'),
    read('/sys/hypervisor/uuid'),
  ]);
  const evidence = [['sys_vendor', vendor], ['product_name', product], ['product_version', version], ['bios_vendor', bios], ['bios_version', biosVersion]]
    .filter(([, v]) => v !== '')
    .map(([k, v]) => `${k} ${JSON.stringify(v)}`)
    .join(', ');
  // Nitro instances name Amazon; Xen-based ones (m4, c4, t2, ...) name Xen, with "amazon" in the
  // version strings and an id that starts with ec2 (EC2 in upper case, or with its first group's
  // bytes swapped, where firmware reads the UUID little-endian).
  const xen = /xen/i.test(vendor) || /xen/i.test(bios) || /domU/i.test(product);
  const ec2Id = [uuid, serial, xenUuid].some((id) => /^ec2/i.test(id) || /^ec2/i.test(swappedFirstGroup(id)));
  if (/amazon/i.test(vendor) || /amazon/i.test(bios) || /amazon/i.test(version) || /amazon/i.test(biosVersion) || (xen && ec2Id)) return { cloud: 'aws', bareMetal: false, evidence };
  if (/google/i.test(vendor) || /google compute engine/i.test(product)) return { cloud: 'gce', bareMetal: false, evidence };
  if (asset === AZURE_ASSET_TAG || (/microsoft corporation/i.test(vendor) && /virtual machine/i.test(product))) return { cloud: 'azure', bareMetal: false, evidence };
  if (vendor === '' && product === '') return { bareMetal: false, evidence: evidence || '/sys/class/dmi/id names no vendor' };
  return { bareMetal: !VIRTUAL_PLATFORM.test(`${vendor} ${product} ${bios}`), evidence };
}

/** "2a3bc2ec-..." -> "ecc23b2a": the first group of a UUID with its bytes in the other order. */
function swappedFirstGroup(uuid: string): string {
  const group = /^([0-9a-f]{8})-/i.exec(uuid)?.[1];
  return group ? (group.match(/../g) ?? []).reverse().join('') : '';
}
