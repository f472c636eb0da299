// Values from the machine on the command line: which clouds --set cloud= names, the exit code of a
// metadata service that does not answer (its own, not "invalid configuration"), and a bare-metal
// machine that does not wait for metadata services it does not have, and --offline, which asks none.
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { startHttp, type RunningServer } from '../config/helpers/servers.ts';

const REPO = join(import.meta.dirname, '..', '..');
const FLEET_AWS = join(REPO, 'examples', 'fleet-aws.yaml');
const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function rootWithDmi(dmi: Record<string, string>): string {
  const root = scratchDir();
  mkdirSync(join(root, 'sys/class/dmi/id'), { recursive: true });
  for (const [name, value] of Object.entries(dmi)) writeFileSync(join(root, 'sys/class/dmi/id', name), `${value}\n`);
  return root;
}

/** A node that needs only what bare metal has: its hostname. */
function nameOnlyConfig(): string {
  const file = join(scratchDir(), 'node.yaml');
  writeFileSync(
    file,
    'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  kubernetes:\n    role: worker\n    bootstrap: join\n    controlPlaneEndpoint: cp.example:6443\n    token: abcdef.0123456789abcdef\n    caCertHashes: ["sha256:0f0e0d0c0b0a09080706050403020100f0e0d0c0b0a09080706050403020100f"]\n    node:\n      name: { fromMachine: localHostname }\n',
  );
  return file;
}

describe('--set cloud=', () => {
  it.each(['amazon', 'AWS', 'none', ''])('refuses "%s", a name machineadm does not know (exit 2), rather than reading it as bare metal', async (name) => {
    const r = await runCli(['plan', '-c', FLEET_AWS, '--root', scratchDir(), '--set', `cloud=${name}`], { env: { MACHINEADM_IMDS_ENDPOINT: 'http://127.0.0.1:9' } });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`error: --set: cloud "${name}" is not one machineadm knows\nhint: one of aws, azure, gce, bare-metal (bare-metal: read no metadata service; the hostname and the DMI product UUID are the machine's values)\n`);
  });

  it('takes bare-metal: the hostname, with its source saying it was given', async () => {
    const r = await runCli(['plan', '-c', nameOnlyConfig(), '--root', rootWithDmi({ sys_vendor: 'QEMU' }), '--set', 'cloud=bare-metal'], { env: { MACHINEADM_IMDS_ENDPOINT: 'http://127.0.0.1:9' } });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/localHostname from the machine's hostname \(--set cloud=bare-metal\)/);
  });
});

describe('a metadata service that does not answer', () => {
  it('ends the run with exit 6 and its own message, not "invalid configuration", before anything changes', async () => {
    const refusing = await startHttp((_, res) => res.writeHead(403).end('forbidden'));
    servers.push(refusing);
    const root = rootWithDmi({ sys_vendor: 'Amazon EC2', product_name: 'm5.large' });
    const r = await runCli(['init', '-c', FLEET_AWS, '--root', root], { env: { MACHINEADM_IMDS_ENDPOINT: refusing.url } });
    expect(r.code).toBe(6);
    expect(r.stderr).toMatch(/^error: cannot read localHostname, providerID, zone, region, instanceType from the machine \(the firmware \(DMI sys_vendor "Amazon EC2", product_name "m5.large"\) names aws\): aws instance metadata: .*403.*; nothing was changed\nhint: run again once the metadata service answers/);
    expect(r.stderr).not.toContain('invalid configuration');
    expect(readdirSync(root, { recursive: true }).sort()).toEqual(['sys', 'sys/class', 'sys/class/dmi', 'sys/class/dmi/id', 'sys/class/dmi/id/product_name', 'sys/class/dmi/id/sys_vendor']);
  });

  // A service that never answers (as 169.254.169.254 on a network without one): a machine whose
  // firmware names a maker of physical machines asks once, briefly, and goes on as bare metal.
  it('costs a bare-metal machine about a second at most, and its plan says why it is bare metal', async () => {
    const silent = await startHttp(() => undefined);
    servers.push(silent);
    const root = rootWithDmi({ sys_vendor: 'Dell Inc.', product_name: 'PowerEdge R650', bios_vendor: 'Dell Inc.' });
    const started = Date.now();
    const r = await runCli(['plan', '-c', nameOnlyConfig(), '--root', root], { env: { MACHINEADM_IMDS_ENDPOINT: silent.url } });
    const elapsed = Date.now() - started;
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('localHostname from the machine\'s hostname (bare metal: DMI sys_vendor "Dell Inc.", product_name "PowerEdge R650", bios_vendor "Dell Inc." names no cloud, and no metadata service answered)');
    // A generous bound: the patient probing a cloud machine gets takes a minute here.
    expect(elapsed).toBeLessThan(15_000);
  }, 90_000);
});

// An air-gapped machine: a value only a metadata service has cannot be had, so the run is refused
// at once, as every other network use under --offline is, and never waits for an answer it
// did not ask for (nor asks, when the configuration itself says offline).
describe('--offline', () => {
  it.each([
    ['firmware that names no cloud', {}],
    ['firmware that names AWS', { sys_vendor: 'Amazon EC2', product_name: 'm5.large' }],
  ])('refuses at once (exit 2), before anything changes, a value only a metadata service has, on %s', async (_, dmi) => {
    const metadata = await startHttp((_req, res) => res.writeHead(404).end());
    servers.push(metadata);
    const root = rootWithDmi(dmi);
    const before = readdirSync(root, { recursive: true }).sort();
    const started = Date.now();
    const r = await runCli(['init', '--offline', '-c', FLEET_AWS, '--root', root], { env: { MACHINEADM_IMDS_ENDPOINT: metadata.url } });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: --offline: cannot read localHostname, providerID, zone, region, instanceType from the machine without asking a metadata service/);
    expect(r.stderr).toMatch(/\nhint: .*--set NAME=VALUE/);
    expect(metadata.requests).toEqual([]);
    expect(readdirSync(root, { recursive: true }).sort()).toEqual(before);
  }, 90_000);

  it('spec.security.offline asks no metadata service either: the run is refused as with --offline (exit 2)', async () => {
    const metadata = await startHttp((_req, res) => res.writeHead(404).end());
    servers.push(metadata);
    const file = join(scratchDir(), 'offline.yaml');
    writeFileSync(file, `${readFileSync(nameOnlyConfig(), 'utf8')}  security:\n    offline: true\n`);
    const r = await runCli(['plan', '-c', file, '--root', rootWithDmi({})], { env: { MACHINEADM_IMDS_ENDPOINT: metadata.url } });
    expect(metadata.requests).toEqual([]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: --offline: cannot read localHostname from the machine without asking a metadata service/);
  }, 90_000);

  it('takes the values a bare-metal machine has itself, asking no metadata service', async () => {
    const metadata = await startHttp((_req, res) => res.writeHead(404).end());
    servers.push(metadata);
    const r = await runCli(['plan', '--offline', '-c', nameOnlyConfig(), '--root', rootWithDmi({ sys_vendor: 'Dell Inc.', product_name: 'PowerEdge R650' })], { env: { MACHINEADM_IMDS_ENDPOINT: metadata.url } });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(metadata.requests).toEqual([]);
    expect(r.stdout).toContain('localHostname from the machine\'s hostname (bare metal: DMI sys_vendor "Dell Inc.", product_name "PowerEdge R650" names no cloud; no metadata service asked: --offline)');
  });
});
