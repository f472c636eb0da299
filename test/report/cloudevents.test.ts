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

  it('is not sent for lines of command output (their tail reaches the failure event)', () => {
    expect(isReportedEvent(emitted({ type: 'step.output', message: 'x' }))).toBe(false);
    expect(isReportedEvent(emitted({ type: 'log', message: 'x' }))).toBe(true);
  });

  it('joins into a batch that parses as a JSON array of the same events', () => {
    const texts = [1, 2, 3].map((i) => JSON.stringify(toCloudEvent(emitted({ type: 'log', message: String(i) }), identity)));
    expect((JSON.parse(batchBody(texts)) as unknown[]).map((e) => (e as { data: { message: string } }).data.message)).toEqual(['1', '2', '3']);
  });
});
