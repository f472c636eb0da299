// spec.report: where the outcome of a run goes. Files named here (CA, client certificate and key,
// token files) are machine paths, read under --root; their contents are checked before the run
// changes anything (src/report/endpoints.ts).
import { redactUrlsIn } from '../../redaction.ts';
import { array, boolean, integer, object, optional, record, string, withDefault } from './dsl.ts';
import { secret } from './secret-field.ts';
import { networkUrlProblem } from './url.ts';
import { BUDGETS } from '../budgets.ts';

const absolutePath = (what: string) =>
  string({
    minLength: 1,
    pattern: /^(\/|[A-Za-z]:\\)/,
    patternHint: `the absolute path of ${what}, e.g. /etc/machineadm/collector-ca.pem`,
  });

// endpointUrlProblem's scheme rule as a pattern (the URL parser skips leading controls and spaces,
// and schemes are case-insensitive).
const HTTP_SCHEME = /^[\u0000-\u0020]*[Hh][Tt][Tt][Pp][Ss]?:/;

function endpointUrlProblem(value: string): string | undefined {
  const unparsable = networkUrlProblem(value);
  if (unparsable) return unparsable;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    const shown = redactUrlsIn(value);
    return `"${shown.length > 80 ? shown.slice(0, 77) + '...' : shown}" is not a URL|an http:// or https:// URL such as https://collector.example/events`;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `the scheme "${url.protocol.replace(/:$/, '')}" is not supported|use an http:// or https:// URL`;
  if (url.username || url.password) return 'the URL holds a user name or password|give credentials with bearerToken or headers, never in the URL';
  if (url.hash) return 'the URL has a #fragment|remove it; fragments are never sent';
  return undefined;
}

// Header names as RFC 9110 tokens; machineadm sets Content-Type itself.
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export const reportEndpoint = object(
  {
    url: string({ minLength: 1, check: endpointUrlProblem, jsonPattern: HTTP_SCHEME, description: 'where CloudEvents are POSTed (http:// or https://)', example: 'https://collector.example/events' }),
    bearerToken: optional(secret({ description: 'sent as "Authorization: Bearer <token>"', example: { valueFrom: { file: '/etc/machineadm/collector-token' } } })),
    caFile: optional(absolutePath('a PEM CA bundle that signs the collector certificate (replaces the system CAs for this endpoint)'), { description: 'a PEM CA bundle that signs the collector certificate (replaces the system CAs for this endpoint)', example: '/etc/machineadm/collector-ca.pem' }),
    clientCertFile: optional(absolutePath('a PEM client certificate for mutual TLS'), { description: 'a PEM client certificate for mutual TLS', example: '/etc/machineadm/client.pem' }),
    clientKeyFile: optional(absolutePath('the PEM private key of clientCertFile'), { description: 'the PEM private key of clientCertFile', example: '/etc/machineadm/client-key.pem' }),
    headers: optional(record(string({ check: (v) => (/[\r\n]/.test(v) ? 'a header value cannot hold a line break' : undefined) }), { key: { pattern: HEADER_NAME, patternHint: 'a header name such as X-Cluster' }, description: 'extra HTTP headers sent with every request', example: { 'X-Cluster': 'prod-eu' } })),
    batch: optional(boolean({ description: 'send up to 100 events per request as application/cloudevents-batch+json', example: true })),
  },
  {
    check: (v, report) => {
      if ((v.clientCertFile === undefined) !== (v.clientKeyFile === undefined)) {
        report(v.clientCertFile === undefined ? 'clientCertFile' : 'clientKeyFile', 'clientCertFile and clientKeyFile go together', 'give both for mutual TLS, or neither');
      }
      const url = v.url.toLowerCase();
      if (!url.startsWith('https:') && (v.caFile || v.clientCertFile)) report('caFile', 'TLS files are given for an http:// URL', 'use https://, or remove caFile/clientCertFile/clientKeyFile');
      for (const name of Object.keys(v.headers ?? {})) {
        const lower = name.toLowerCase();
        if (lower === 'content-type' || lower === 'content-length') report(['headers', name], `${name} is set by machineadm`, 'remove it');
        if (lower === 'authorization' && v.bearerToken !== undefined) report(['headers', name], 'Authorization is also set by bearerToken', 'give one of them');
      }
    },
  },
);

export const reportSection = object({
  // Each endpoint is a spool of every event of a run in the state directory, a queue and a
  // connection: 5,000 of them took over 400 MiB and wrote 60,000 spool files in one run.
  endpoints: optional(array(reportEndpoint, { maxItems: BUDGETS.endpoints, maxItemsHint: 'a run reports to one collector, or a few: send to a collector that fans the events out', description: 'collectors that receive every run, phase and step event as a CloudEvent', example: [{ url: 'https://collector.example/events', bearerToken: { valueFrom: { file: '/etc/machineadm/collector-token' } } }] })),
  clusterAPISentinel: withDefault(boolean({ description: 'write /run/cluster-api/bootstrap-success.complete after a successful provisioning', example: false }), true),
  deadlineSeconds: withDefault(integer({ min: 1, max: 3600, description: 'the longest a run waits for endpoints at its end; what is left stays spooled', example: 60 }), 30),
}, {
  // An endpoint's events are spooled under its URL: two endpoints of one URL (one gateway, told
  // apart by a header or a token) would each remove what the other had not yet been sent.
  check: (r, report) => {
    const first = new Map<string, number>();
    (r.endpoints ?? []).forEach((endpoint, i) => {
      const before = first.get(endpoint.url);
      if (before === undefined) first.set(endpoint.url, i);
      else report(['endpoints', i, 'url'], `is the URL of endpoints[${before}] too: each endpoint's events are kept in the spool under its URL`, 'give each endpoint its own URL (a gateway that tells tenants apart by header can take a path or a query per tenant)');
    });
  },
});
