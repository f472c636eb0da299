// A test PKI made with the openssl CLI: a CA, a server certificate for 127.0.0.1 and a client
// certificate signed by it, and a second CA with its own server certificate (the "wrong" one).
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TestPki {
  dir: string;
  caFile: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCertFile: string;
  clientKeyFile: string;
  clientCert: string;
  clientKey: string;
  /** Signed by another CA: a client trusting `ca` must refuse it. */
  wrongServerCert: string;
  wrongServerKey: string;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function issue(dir: string, ca: string, name: string, subject: string, ext: string): void {
  openssl(dir, ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject]);
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-out', `${name}.crt`, '-days', '2', '-extfile', `${name}.ext`]);
}

export function makePki(dir: string): TestPki {
  for (const ca of ['ca', 'wrongca']) {
    openssl(dir, ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${ca}.key`, '-out', `${ca}.crt`, '-days', '2', '-subj', `/CN=machineadm test ${ca}`]);
  }
  const server = 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n';
  issue(dir, 'ca', 'server', '/CN=127.0.0.1', server);
  issue(dir, 'ca', 'client', '/CN=machineadm client', 'extendedKeyUsage=clientAuth\n');
  issue(dir, 'wrongca', 'wrongserver', '/CN=127.0.0.1', server);
  const read = (name: string) => readFileSync(join(dir, name), 'utf8');
  return {
    dir,
    caFile: join(dir, 'ca.crt'),
    ca: read('ca.crt'),
    serverCert: read('server.crt'),
    serverKey: read('server.key'),
    clientCertFile: join(dir, 'client.crt'),
    clientKeyFile: join(dir, 'client.key'),
    clientCert: read('client.crt'),
    clientKey: read('client.key'),
    wrongServerCert: read('wrongserver.crt'),
    wrongServerKey: read('wrongserver.key'),
  };
}
