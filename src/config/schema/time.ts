// spec.timeServers: the NTP servers of whichever time client the machine has (chrony or
// systemd-timesyncd).
import { array, object, string } from './dsl.ts';
import { ipFamily } from './ip.ts';

const HOST_NAME = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

function serverProblem(value: string): string | undefined {
  if (ipFamily(value) !== 0 || HOST_NAME.test(value)) return undefined;
  return `"${value.length > 80 ? value.slice(0, 77) + '...' : value}" is not a host name or IP address|give one server per item, e.g. 0.pool.ntp.org or 10.0.0.1`;
}

export const timeServersSection = object(
  {
    servers: array(string({ minLength: 1, maxLength: 253, check: serverProblem, description: 'an NTP server: a host name or an IP address', example: '0.pool.ntp.org' }), {
      minItems: 1,
      unique: true,
      description: 'the NTP servers, in order of preference, e.g. ["0.pool.ntp.org", "10.0.0.1"]', example: ['0.pool.ntp.org', '10.0.0.1'],
    }),
  },
  { description: "NTP servers for the time client the machine has, the only ones it uses besides those DHCP gives: chrony (a sources file, or a marked block in chrony.conf; the image's server, pool and peer lines of chrony.conf and of the other sources files beside machineadm's commented out) or systemd-timesyncd (a drop-in); the client reloads only when they change", example: { servers: ['0.pool.ntp.org'] } },
);
