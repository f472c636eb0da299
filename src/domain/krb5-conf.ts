// The minimal /etc/krb5.conf written after a join when the machine has none: enough for the
// machine's own Kerberos clients to find the realm. An operator's file is never replaced.
import type { DomainJoinSpec } from '../config/schema/index.ts';
import { realmOf } from './adcli.ts';

export const KRB5_CONF = '/etc/krb5.conf';

export function renderKrb5Conf(dj: DomainJoinSpec): string {
  const realm = realmOf(dj.domain);
  const dc = dj.domainController;
  const lines = [
    '# Written by machineadm for spec.domainJoin because the machine had no krb5.conf; machineadm never rewrites it.',
    '[libdefaults]',
    `    default_realm = ${realm}`,
    '    dns_lookup_realm = false',
    // Without a named domain controller the KDCs come from the domain's SRV records.
    `    dns_lookup_kdc = ${dc === undefined ? 'true' : 'false'}`,
    '    rdns = false',
    '    dns_canonicalize_hostname = false',
  ];
  if (dc !== undefined) lines.push('', '[realms]', `    ${realm} = {`, `        kdc = ${dc}`, `        admin_server = ${dc}`, '    }');
  lines.push('', '[domain_realm]', `    .${dj.domain.toLowerCase()} = ${realm}`, `    ${dj.domain.toLowerCase()} = ${realm}`, '');
  return lines.join('\n');
}
