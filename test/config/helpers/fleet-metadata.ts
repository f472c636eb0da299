// Instance metadata of one machine per cloud, in the shapes and at the paths each cloud documents
// (the servers in servers.ts serve it), and what a fleet configuration should resolve from it.
//   AWS: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-categories.html
//     (IMDSv2: PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds, then
//     X-aws-ec2-metadata-token on every GET /latest/meta-data/...)
//   Azure: https://learn.microsoft.com/azure/virtual-machines/instance-metadata-service
//     (GET /metadata/instance?api-version=... with "Metadata: true"; compute and network objects)
//   GCE: https://cloud.google.com/compute/docs/metadata/predefined-metadata-keys
//     (GET /computeMetadata/v1/... with "Metadata-Flavor: Google"; zone and machine-type are
//     full resource names such as projects/<number>/zones/<zone>)
import type { Cloud, ImdsBehaviour } from './servers.ts';

export const AWS_METADATA: Record<string, string> = {
  'instance-id': 'i-0a1b2c3d4e5f67890',
  'local-hostname': 'ip-10-0-1-5.ec2.internal',
  'local-ipv4': '10.0.1.5',
  'instance-type': 'm5.large',
  'placement/availability-zone': 'us-east-1a',
  'placement/region': 'us-east-1',
};

export function azureMetadata(compute: Record<string, unknown> = {}) {
  return {
    compute: {
      location: 'westeurope',
      zone: '2',
      platformFaultDomain: '0',
      vmSize: 'Standard_D2s_v3',
      vmId: '02aab8a4-74ef-476e-8182-f6d2ba4166a6',
      name: 'pool-vm-7',
      osProfile: { computerName: 'pool-vm-7', adminUsername: 'azureuser' },
      subscriptionId: '8d10da13-8125-4ba9-a717-bf7490507b3d',
      resourceGroupName: 'Fleet-RG',
      vmScaleSetName: '',
      // The VM's resource ID as Azure gives it: the resource group as created (mixed case).
      resourceId: '/subscriptions/8d10da13-8125-4ba9-a717-bf7490507b3d/resourceGroups/Fleet-RG/providers/Microsoft.Compute/virtualMachines/pool-vm-7',
      ...compute,
    },
    network: { interface: [{ ipv4: { ipAddress: [{ privateIpAddress: '10.1.0.4', publicIpAddress: '' }] } }] },
  };
}

export const GCE_METADATA: Record<string, string> = {
  'instance/name': 'pool-a-x7k2',
  'instance/hostname': 'pool-a-x7k2.us-central1-a.c.fleet-project.internal',
  'instance/zone': 'projects/123456789012/zones/us-central1-a',
  'instance/machine-type': 'projects/123456789012/machineTypes/e2-standard-4',
  'instance/network-interfaces/0/ip': '10.128.0.7',
  'project/project-id': 'fleet-project',
};

export const FLEET_MACHINES: Record<Cloud, ImdsBehaviour> = {
  aws: { instanceId: AWS_METADATA['instance-id'], metadata: AWS_METADATA },
  azure: { instanceId: '02aab8a4-74ef-476e-8182-f6d2ba4166a6', metadata: azureMetadata() },
  gce: { instanceId: '4567890123456789012', metadata: GCE_METADATA },
};

/** What examples/fleet-<cloud>.yaml resolves to on the machines above: field -> [value, source]. */
export const FLEET_EXPECTED: Record<Cloud, Record<string, [string, string]>> = {
  aws: {
    'spec.kubernetes.node.name': ['ip-10-0-1-5.ec2.internal', 'AWS IMDS meta-data/local-hostname'],
    'spec.kubernetes.node.providerID': ['aws:///us-east-1a/i-0a1b2c3d4e5f67890', 'AWS IMDS meta-data/placement/availability-zone + AWS IMDS meta-data/instance-id'],
    'spec.kubernetes.node.labels["topology.kubernetes.io/zone"]': ['us-east-1a', 'AWS IMDS meta-data/placement/availability-zone'],
    'spec.kubernetes.node.labels["topology.kubernetes.io/region"]': ['us-east-1', 'AWS IMDS meta-data/placement/region'],
    'spec.kubernetes.node.labels["node.kubernetes.io/instance-type"]': ['m5.large', 'AWS IMDS meta-data/instance-type'],
  },
  azure: {
    'spec.kubernetes.node.name': ['pool-vm-7', 'Azure IMDS compute.osProfile.computerName'],
    'spec.kubernetes.node.providerID': [
      'azure:///subscriptions/8d10da13-8125-4ba9-a717-bf7490507b3d/resourceGroups/fleet-rg/providers/Microsoft.Compute/virtualMachines/pool-vm-7',
      'Azure IMDS compute.resourceId',
    ],
    'spec.kubernetes.node.labels["topology.kubernetes.io/zone"]': ['westeurope-2', 'Azure IMDS compute.location + "-" + compute.zone'],
    'spec.kubernetes.node.labels["topology.kubernetes.io/region"]': ['westeurope', 'Azure IMDS compute.location'],
    'spec.kubernetes.node.labels["node.kubernetes.io/instance-type"]': ['Standard_D2s_v3', 'Azure IMDS compute.vmSize'],
  },
  gce: {
    'spec.kubernetes.node.name': ['pool-a-x7k2', 'GCE metadata instance/name'],
    'spec.kubernetes.node.providerID': ['gce://fleet-project/us-central1-a/pool-a-x7k2', 'GCE metadata project/project-id + GCE metadata instance/zone + GCE metadata instance/name'],
    'spec.kubernetes.node.labels["topology.kubernetes.io/zone"]': ['us-central1-a', 'GCE metadata instance/zone'],
    'spec.kubernetes.node.labels["topology.kubernetes.io/region"]': ['us-central1', 'GCE metadata instance/zone (without its last part)'],
    'spec.kubernetes.node.labels["node.kubernetes.io/instance-type"]': ['e2-standard-4', 'GCE metadata instance/machine-type'],
  },
};
