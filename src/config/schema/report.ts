// spec.report: where the outcome of a run goes.
import { array, boolean, integer, object, optional, record, secret, string, withDefault } from './dsl.ts';

export const reportEndpoint = object({
  url: string({ pattern: /^https?:\/\/\S+$/, patternHint: 'an http:// or https:// URL' }),
  bearerToken: optional(secret()),
  caFile: optional(string({ minLength: 1 })),
  clientCertFile: optional(string({ minLength: 1 })),
  clientKeyFile: optional(string({ minLength: 1 })),
  headers: optional(record(string())),
  batch: optional(boolean({ description: 'send application/cloudevents-batch+json' })),
});

export const reportSection = object({
  endpoints: optional(array(reportEndpoint)),
  clusterAPISentinel: withDefault(boolean(), true),
  deadlineSeconds: withDefault(integer({ min: 1, max: 3600 }), 30),
});
