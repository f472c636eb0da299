// The machine's instance id in the report: the metadata service's when machineadm read the
// configuration from instance metadata itself, cloud-init's record otherwise.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { imdsHandler, startHttp, type Cloud, type RunningServer } from '../config/helpers/servers.ts';
import { startCollector, type Collector } from './collector.ts';

const CLOUD_INIT_RECORD = 'var/lib/cloud/data/instance-id';

describe('the instance id in result.json and events', () => {
  let collector: Collector;
  const servers: RunningServer[] = [];
  beforeAll(async () => {
    collector = await startCollector();
  });
  afterAll(async () => Promise.all([collector.close(), ...servers.map((s) => s.close())]));

  function userData(): string {
    return `apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  report:\n    deadlineSeconds: 5\n    endpoints:\n      - url: ${collector.url}\n`;
  }

  async function init(source: string, root: string, env: NodeJS.ProcessEnv): Promise<{ result: string | undefined; events: unknown[] }> {
    const start = collector.requests.length;
    const run = await runCli(['init', '-c', source, '--root', root], { env });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const document = JSON.parse(readFileSync(join(root, 'run/machineadm/result.json'), 'utf8')) as { machine: { instanceId?: string } };
    const events = collector.requests.slice(start).flatMap((r) => r.events);
    expect(events.length).toBeGreaterThan(5);
    return { result: document.machine.instanceId, events: events.map((e) => e.instanceid) };
  }

  it.each<[Cloud, string]>([
    ['aws', 'i-0abc123def4567890'],
    ['azure', '02aab8a4-74ef-476e-8182-f6d2ba4166a6'],
    ['gce', '4567890123456789012'],
  ])('is the %s metadata service\'s (%s) when the configuration came from imds://, over cloud-init\'s record', async (cloud, id) => {
    const server = await startHttp(imdsHandler(cloud, { userData: userData(), instanceId: id }));
    servers.push(server);
    const root = scratchDir();
    mkdirSync(join(root, CLOUD_INIT_RECORD, '..'), { recursive: true });
    writeFileSync(join(root, CLOUD_INIT_RECORD), 'i-recorded-by-cloud-init\n');
    const { result, events } = await init(`imds://${cloud}/user-data`, root, { MACHINEADM_IMDS_ENDPOINT: server.url });
    expect(result).toBe(id);
    expect(new Set(events)).toEqual(new Set([id]));
  });

  it('is cloud-init\'s record when the configuration came from a file, and absent without either', async () => {
    const config = join(scratchDir(), 'node.yaml');
    writeFileSync(config, userData());
    const recorded = scratchDir();
    mkdirSync(join(recorded, CLOUD_INIT_RECORD, '..'), { recursive: true });
    writeFileSync(join(recorded, CLOUD_INIT_RECORD), 'i-recorded-by-cloud-init\n');
    expect((await init(config, recorded, {})).result).toBe('i-recorded-by-cloud-init');
    const none = await init(config, scratchDir(), {});
    expect(none.result).toBeUndefined();
    expect(new Set(none.events)).toEqual(new Set([undefined]));
  });

  it('falls back to cloud-init\'s record when the metadata service has no instance id', async () => {
    const server = await startHttp(imdsHandler('aws', { userData: userData() }));
    servers.push(server);
    const root = scratchDir();
    mkdirSync(join(root, CLOUD_INIT_RECORD, '..'), { recursive: true });
    writeFileSync(join(root, CLOUD_INIT_RECORD), 'i-recorded-by-cloud-init\n');
    expect((await init('imds://aws/user-data', root, { MACHINEADM_IMDS_ENDPOINT: server.url })).result).toBe('i-recorded-by-cloud-init');
  });
});
