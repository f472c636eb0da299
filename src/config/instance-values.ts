// The values a fleet configuration may reference, read from this machine's instance metadata at
// each cloud's documented paths:
//   AWS (IMDSv2): /latest/meta-data/{instance-id, local-hostname, local-ipv4, instance-type,
//     placement/availability-zone, placement/region}
//     https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-categories.html
//   Azure: /metadata/instance?api-version=2021-02-01 (JSON, header Metadata: true): compute.{vmId,
//     name, osProfile.computerName, location, zone, platformFaultDomain, vmSize, resourceId},
//     network.interface[0].ipv4.ipAddress[0].privateIpAddress
//     https://learn.microsoft.com/azure/virtual-machines/instance-metadata-service
//   GCE (Metadata-Flavor: Google): /computeMetadata/v1/instance/{id, name, hostname, zone,
//     machine-type, network-interfaces/0/ip}, /computeMetadata/v1/project/project-id
//     https://cloud.google.com/compute/docs/metadata/predefined-metadata-keys
// A value the service does not have (404) is left out; whether it was needed is decided later.
import type { ConfigHost } from '../host/config-host.ts';
import { HttpError } from '../host/http.ts';
import { AZURE_DOCUMENT_MAX_BYTES, baseUrl, imdsRequest, ImdsError, type Cloud, type ImdsOptions } from './imds.ts';

/** One value and where it came from, e.g. "AWS IMDS meta-data/placement/availability-zone". */
export interface SourcedValue {
  value: string;
  source: string;
}

/** Everything read, by name: the references' names plus what a provider ID is made of. */
export type InstanceValues = Record<string, SourcedValue>;

const MAX_VALUE_BYTES = 4096;

export async function readInstanceValues(host: ConfigHost, cloud: Cloud, options: Omit<ImdsOptions, 'maxBytes'>): Promise<InstanceValues> {
  const base = baseUrl(host, cloud);
  const get = async (url: string, headers: Record<string, string>, flavor?: string, maxBytes = MAX_VALUE_BYTES): Promise<string | undefined> => {
    const answer = await imdsRequest(host, { ...options, maxBytes }, url, { headers, acceptStatus: [404] });
    if (flavor !== undefined && answer.headers['metadata-flavor'] !== flavor) throw new ImdsError(`${url}: the answer lacks "Metadata-Flavor: ${flavor}"`, 'something other than the metadata server answered; check the network');
    return answer.status === 404 ? undefined : answer.body.toString('utf8');
  };
  const out: InstanceValues = {};
  const put = (name: string, value: unknown, source: string) => {
    if (typeof value === 'string' && value !== '') out[name] = { value, source };
  };
  try {
    if (cloud === 'aws') {
      const token = (await imdsRequest(host, { ...options, maxBytes: MAX_VALUE_BYTES }, `${base}/latest/api/token`, { method: 'PUT', headers: { 'X-aws-ec2-metadata-token-ttl-seconds': '300' } })).body.toString('utf8').trim();
      if (!token) throw new ImdsError('AWS IMDS returned an empty session token', 'check the instance metadata options (IMDSv2)');
      const headers = { 'X-aws-ec2-metadata-token': token };
      const paths = { instanceId: 'instance-id', localHostname: 'local-hostname', privateIP: 'local-ipv4', instanceType: 'instance-type', zone: 'placement/availability-zone', region: 'placement/region' };
      const answers = await Promise.all(Object.values(paths).map((path) => get(`${base}/latest/meta-data/${path}`, headers)));
      Object.entries(paths).forEach(([name, path], i) => put(name, answers[i], `AWS IMDS meta-data/${path}`));
      // EC2 names an instance by its id only (a Name tag is not metadata unless tags are exposed).
      if (out.instanceId) out.instanceName = { ...out.instanceId };
    } else if (cloud === 'azure') {
      const text = await get(`${base}/metadata/instance?api-version=2021-02-01`, { Metadata: 'true' }, undefined, AZURE_DOCUMENT_MAX_BYTES);
      let doc: { compute?: Record<string, unknown>; network?: { interface?: Array<{ ipv4?: { ipAddress?: Array<{ privateIpAddress?: unknown }> } }> } };
      try {
        doc = JSON.parse(text ?? '{}') as typeof doc;
      } catch {
        throw new ImdsError('Azure IMDS /metadata/instance is not JSON', 'something other than the metadata service answered; check the network');
      }
      const compute = doc.compute ?? {};
      const from = (field: string) => `Azure IMDS compute.${field}`;
      put('instanceId', compute.vmId, from('vmId'));
      put('localHostname', (compute.osProfile as Record<string, unknown> | undefined)?.computerName, from('osProfile.computerName'));
      put('privateIP', doc.network?.interface?.[0]?.ipv4?.ipAddress?.[0]?.privateIpAddress, 'Azure IMDS network.interface[0].ipv4.ipAddress[0].privateIpAddress');
      put('region', compute.location, from('location'));
      put('instanceType', compute.vmSize, from('vmSize'));
      // As the Azure cloud controller manager labels zones: <location>-<zone> in an availability
      // zone, else the fault domain.
      if (typeof compute.zone === 'string' && compute.zone !== '' && typeof compute.location === 'string') put('zone', `${compute.location}-${compute.zone}`, 'Azure IMDS compute.location + "-" + compute.zone');
      else put('zone', typeof compute.platformFaultDomain === 'string' ? compute.platformFaultDomain : undefined, from('platformFaultDomain'));
      // The VM's own Azure resource ID, which the provider ID is made of: never pieced together
      // from names (a flexible scale set's VM may be named like a uniform one's instance).
      put('azure.resourceId', compute.resourceId, from('resourceId'));
      put('instanceName', compute.name, from('name'));
    } else {
      const headers = { 'Metadata-Flavor': 'Google' };
      const paths = { instanceId: 'instance/id', localHostname: 'instance/hostname', privateIP: 'instance/network-interfaces/0/ip', zone: 'instance/zone', instanceType: 'instance/machine-type', instanceName: 'instance/name', 'gce.project': 'project/project-id' };
      const answers = await Promise.all(Object.values(paths).map((path) => get(`${base}/computeMetadata/v1/${path}`, headers, 'Google')));
      Object.entries(paths).forEach(([name, path], i) => {
        // zone and machine-type are full resource names: projects/<number>/zones/<zone>. Anything
        // else is kept whole, so it fails the check of the field it goes to instead of being cut.
        const full = { zone: /^projects\/[^/]+\/zones\/([^/]+)$/, instanceType: /^projects\/[^/]+\/machineTypes\/([^/]+)$/ }[name];
        const value = full && answers[i] !== undefined ? (full.exec(answers[i]!)?.[1] ?? answers[i]) : answers[i];
        put(name, value, `GCE metadata ${path}`);
      });
      // A GCE region is its zone without the last "-<letter>" (us-central1-a is in us-central1).
      const zone = out.zone?.value;
      if (zone && /^[a-z0-9-]+-[a-z]$/.test(zone)) put('region', zone.replace(/-[a-z]$/, ''), 'GCE metadata instance/zone (without its last part)');
    }
  } catch (error) {
    if (error instanceof HttpError) throw new ImdsError(`${cloud} instance metadata: ${error.message}`, error.hint, { cause: error });
    throw error;
  }
  out.cloud = { value: cloud, source: `${cloud} metadata service` };
  return out;
}
