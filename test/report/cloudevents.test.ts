import { describe, expect, it } from 'vitest';
import { CLOUDEVENT_SIZE_LIMIT, batchBody, isReportedEvent, toCloudEvent } from '../../src/report/cloudevents.ts';
import { EventBus, type MachineEvent, type MachineIdentity } from '../../src/engine/events.ts';

const identity: MachineIdentity = { hostname: 'Node-7.example', nodeName: 'worker-7', instanceId: 'i-0abc', machineadmVersion: '0.1.0', os: 'linux', arch: 'x64' };

function emitted(input: Parameters<EventBus['emit']>[0]): MachineEvent {
  return new EventBus({ runId: 'run-1' }).emit(input);
}

// CloudEvents 1.0: context attribute names are lower-case ASCII letters and digits.
const ATTRIBUTE_NAME = /^[a-z0-9]{1,20}$/;

describe('a machineadm event as a CloudEvent', () => {
  it.each<[string, Parameters<EventBus['emit']>[0], string, string]>([
    ['a step finishing', { type: 'step.finished', phase: 'prepare', step: 'prepare/sysctls', result: 'success', durationMs: 3 }, 'io.machineadm.step.finished', 'prepare/sysctls'],
    ['a phase starting', { type: 'phase.started', phase: 'provision' }, 'io.machineadm.phase.started', 'provision'],
    ['the run finishing', { type: 'run.finished', command: 'init', result: 'failure' }, 'io.machineadm.run.finished', 'run'],
  ])('%s has the structured-mode attributes', (_name, input, type, subject) => {
    const event = emitted(input);
    const ce = toCloudEvent(event, identity);
    expect(ce).toMatchObject({ specversion: '1.0', id: 'run-1.000001', source: 'urn:machineadm:node-7.example', type, subject, datacontenttype: 'application/json', time: event.time });
    expect(ce.data).toEqual(event);
    expect(ce).toMatchObject({ runid: 'run-1', sequence: '000001', hostname: 'Node-7.example', nodename: 'worker-7', instanceid: 'i-0abc', machineadmversion: '0.1.0' });
    for (const name of Object.keys(ce)) expect(name).toMatch(ATTRIBUTE_NAME);
    expect(Number.isNaN(Date.parse(ce.time))).toBe(false);
  });

  it('leaves the instance id out when it is not known', () => {
    const ce = toCloudEvent(emitted({ type: 'run.started' }), { hostname: 'h', nodeName: 'h', machineadmVersion: '1' });
    expect('instanceid' in ce).toBe(false);
  });

  it('stays under 64 KiB however long the output tails are', () => {
    const tail = 'x'.repeat(200_000);
    const ce = toCloudEvent({ id: 'r.000001', type: 'step.finished', time: new Date().toISOString(), runId: 'r', error: { message: 'm', code: 1, details: { outputTail: tail } } }, { ...identity, hostname: 'h'.repeat(2000) });
    expect(Buffer.byteLength(JSON.stringify(ce))).toBeLessThanOrEqual(CLOUDEVENT_SIZE_LIMIT);
    expect(ce.data.truncated).toBe(true);
  });

  it('stays under 64 KiB when a step changed a thousand files, keeping the first changes and saying how many were left out', () => {
    const changes = Array.from({ length: 1000 }, (_, i) => ({ action: 'create', target: `/etc/app/conf.d/file-${String(i).padStart(4, '0')}.conf`, detail: 'mode 0644, 4 bytes' }));
    const ce = toCloudEvent(emitted({ type: 'step.finished', phase: 'prepare', step: 'prepare/files', result: 'success', durationMs: 3, changes }), identity);
    expect(Buffer.byteLength(JSON.stringify(ce))).toBeLessThanOrEqual(CLOUDEVENT_SIZE_LIMIT);
    expect(ce.data.truncated).toBe(true);
    const kept = ce.data.changes!;
    const marker = kept.at(-1)!;
    expect(marker.target).toMatch(/^\[cut by machineadm: (\d+) more entries removed to keep the event under 60 KiB\]$/);
    const removed = Number(/(\d+) more entries/.exec(marker.target)![1]);
    expect(kept.slice(0, -1)).toEqual(changes.slice(0, 1000 - removed));
    expect(kept.length - 1).toBeGreaterThan(100);
  });

  it('is not sent for lines of command output (their tail reaches the failure event)', () => {
    expect(isReportedEvent(emitted({ type: 'step.output', message: 'x' }))).toBe(false);
    expect(isReportedEvent(emitted({ type: 'log', message: 'x' }))).toBe(true);
  });

  it('joins into a batch that parses as a JSON array of the same events', () => {
    const texts = [1, 2, 3].map((i) => JSON.stringify(toCloudEvent(emitted({ type: 'log', message: String(i) }), identity)));
    expect((JSON.parse(batchBody(texts)) as unknown[]).map((e) => (e as { data: { message: string } }).data.message)).toEqual(['1', '2', '3']);
  });
});
