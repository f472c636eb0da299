// machineadm events as CloudEvents 1.0 in structured JSON mode: the envelope carries who sent it
// (source, extension attributes) and what it is about (type, subject); data is the event itself.
// Pure: no I/O.
import { EVENT_SIZE_LIMIT, limitEventSize, type MachineEvent, type MachineIdentity } from '../engine/events.ts';

export const CLOUDEVENT_CONTENT_TYPE = 'application/cloudevents+json';
export const CLOUDEVENT_BATCH_CONTENT_TYPE = 'application/cloudevents-batch+json';
export const CLOUDEVENT_TYPE_PREFIX = 'io.machineadm.';
/** The most a single CloudEvent takes in JSON. */
export const CLOUDEVENT_SIZE_LIMIT = 64 * 1024;

export interface CloudEvent {
  specversion: '1.0';
  id: string;
  source: string;
  type: string;
  time: string;
  subject: string;
  datacontenttype: 'application/json';
  /** Extension attributes (lower-case letters and digits, as CloudEvents 1.0 requires). */
  runid: string;
  sequence: string;
  hostname: string;
  nodename: string;
  instanceid?: string;
  machineadmversion: string;
  data: MachineEvent;
}

/**
 * The events that go to endpoints: every start and finish, and log lines; command output only
 * reaches them as a failure's tail, and a download's progress not at all (it is for whoever
 * watches the run, and stale once spooled).
 */
export function isReportedEvent(event: MachineEvent): boolean {
  return event.type !== 'step.output' && event.type !== 'step.progress';
}

/** urn:machineadm:<hostname>: the producer, stable across runs of one machine. */
export function sourceOf(identity: MachineIdentity): string {
  return `urn:machineadm:${encodeURIComponent(identity.hostname.toLowerCase())}`;
}

function subjectOf(event: MachineEvent): string {
  if (event.step) return event.step;
  if (event.phase) return event.phase;
  return event.type.startsWith('run.') ? 'run' : (event.command ?? 'run');
}

export function toCloudEvent(event: MachineEvent, identity: MachineIdentity): CloudEvent {
  const seq = event.id.slice(event.id.lastIndexOf('.') + 1);
  const envelope: CloudEvent = {
    specversion: '1.0',
    id: event.id,
    source: sourceOf(identity),
    type: CLOUDEVENT_TYPE_PREFIX + event.type,
    time: event.time,
    subject: subjectOf(event),
    datacontenttype: 'application/json',
    runid: event.runId,
    sequence: seq,
    hostname: identity.hostname,
    nodename: identity.nodeName,
    ...(identity.instanceId ? { instanceid: identity.instanceId } : {}),
    machineadmversion: identity.machineadmVersion,
    data: event,
  };
  const size = Buffer.byteLength(JSON.stringify(envelope));
  if (size <= CLOUDEVENT_SIZE_LIMIT) return envelope;
  const budget = Math.min(EVENT_SIZE_LIMIT, CLOUDEVENT_SIZE_LIMIT - (size - Buffer.byteLength(JSON.stringify(event))));
  return { ...envelope, data: limitEventSize(event, budget) };
}

/** A batch body: the events' JSON texts (as spooled) joined into a JSON array without reparsing. */
export function batchBody(serialized: readonly string[]): string {
  return `[${serialized.join(',')}]`;
}
