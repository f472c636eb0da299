// Real services for the containerd tests: a local OCI registry (docker-registry) on 127.0.0.1, a
// tiny image built with umoci and pushed with skopeo, and a containerd daemon whose root, state and
// socket live under a temporary directory (its config must point the rest there too: CNI, opt).
// Every process is stopped by stop().
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { request } from 'node:http';
import { connect as tlsConnect } from 'node:tls';

export const exec = promisify(execFile);

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function httpStatus(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, { timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => {
      req.destroy();
      resolve(0);
    });
    req.end();
  });
}

async function waitFor(what: string, ready: () => Promise<boolean> | boolean, log: string, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await ready()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not come up within ${timeoutMs} ms; its log:\n${existsSync(log) ? readFileSync(log, 'utf8').slice(-3000) : '(none)'}`);
}

function tlsAnswers(address: string): Promise<boolean> {
  const [host, port] = address.split(':') as [string, string];
  return new Promise((resolve) => {
    const socket = tlsConnect({ host, port: Number(port), rejectUnauthorized: false, timeout: 1000 }, () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
    socket.on('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

export class Services {
  private readonly processes: ChildProcess[] = [];
  readonly dir: string;
  constructor(dir: string) {
    this.dir = dir;
  }

  private start(name: string, argv: string[]): { child: ChildProcess; log: string } {
    const log = join(this.dir, `${name}.log`);
    const fd = openSync(log, 'a');
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', fd, fd] });
    this.processes.push(child);
    return { child, log };
  }

  /**
   * docker-registry with storage under the temporary directory on 127.0.0.1: plain http, or https
   * with a server certificate for 127.0.0.1 signed by a CA of its own (`tls.ca`, PEM, written there).
   */
  async startRegistry(tls?: { ca: string }): Promise<string> {
    const port = await freePort();
    const name = tls ? 'registry-tls' : 'registry';
    const config = join(this.dir, `${name}.yml`);
    const certificate = tls ? await this.serverCertificate(name, tls.ca) : undefined;
    const https = certificate ? `  tls:\n    certificate: ${certificate.cert}\n    key: ${certificate.key}\n` : '';
    writeFileSync(config, `version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: ${join(this.dir, `${name}-data`)}\nhttp:\n  addr: 127.0.0.1:${port}\n${https}`);
    const { log } = this.start(name, ['docker-registry', 'serve', config]);
    const address = `127.0.0.1:${port}`;
    // Any answer over TLS will do for "up": the registry's certificate is not trusted here.
    await waitFor('docker-registry', async () => (tls ? await tlsAnswers(address) : (await httpStatus(`http://${address}/v2/`)) === 200), log);
    return address;
  }

  private async serverCertificate(name: string, caPath: string): Promise<{ cert: string; key: string }> {
    const [caKey, key, csr, cert, ext] = ['ca.key', 'key', 'csr', 'crt', 'ext'].map((s) => join(this.dir, `${name}.${s}`)) as [string, string, string, string, string];
    await exec('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', caKey, '-out', caPath, '-days', '2', '-subj', '/CN=machineadm test CA']);
    await exec('openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', csr, '-subj', '/CN=127.0.0.1']);
    writeFileSync(ext, 'subjectAltName=IP:127.0.0.1\n');
    await exec('openssl', ['x509', '-req', '-in', csr, '-CA', caPath, '-CAkey', caKey, '-CAcreateserial', '-out', cert, '-days', '2', '-extfile', ext]);
    return { cert, key };
  }

  /** A one-layer image built with umoci and pushed with skopeo; returns the repository path and tag. */
  async pushImage(registry: string, repository: string, tag: string): Promise<void> {
    const layout = join(this.dir, 'oci');
    const bundle = join(this.dir, 'bundle');
    // Built once: a second registry gets the same image.
    if (!existsSync(layout)) {
      await exec('umoci', ['init', '--layout', layout]);
      await exec('umoci', ['new', '--image', `${layout}:${tag}`]);
      await exec('umoci', ['unpack', '--image', `${layout}:${tag}`, bundle]);
      writeFileSync(join(bundle, 'rootfs', 'hello.txt'), 'prepared by machineadm\n');
      await exec('umoci', ['repack', '--image', `${layout}:${tag}`, bundle]);
    }
    // skopeo as root keeps a blob cache in /var/lib/containers/cache on the host, and has no flag to
    // move it: it runs with a private, empty /var/lib (mount -n: no /run/mount/utab on the host).
    const skopeo = ['skopeo', 'copy', '--quiet', '--dest-tls-verify=false', `oci:${layout}:${tag}`, `docker://${registry}/${repository}:${tag}`];
    await exec('unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-c', 'mount -n -t tmpfs tmpfs /var/lib && exec "$@"', 'sh', ...skopeo], { timeout: 60_000 });
  }

  /** containerd with this config; root, state and socket under the temporary directory. */
  async startContainerd(config: string): Promise<{ socket: string; log: string }> {
    const base = join(this.dir, 'containerd');
    mkdirSync(base, { recursive: true });
    const socket = join(base, 'c.sock');
    const { child, log } = this.start('containerd', ['containerd', '--config', config, '--root', join(base, 'root'), '--state', join(base, 'state'), '--address', socket]);
    await waitFor('containerd', () => existsSync(socket) || child.exitCode !== null, log);
    if (child.exitCode !== null) throw new Error(`containerd exited with ${child.exitCode}:\n${readFileSync(log, 'utf8').slice(-3000)}`);
    return { socket, log };
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.processes.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
            child.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            child.kill('SIGTERM');
          }),
      ),
    );
  }
}
