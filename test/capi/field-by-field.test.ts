// Every Cluster API example under test/capi/fixtures imports, validates and renders a kubeadm
// configuration that carries every field of the original's clusterConfiguration,
// initConfiguration or joinConfiguration unchanged, except where TRANSLATED says how machineadm
// writes it instead. The rendered output also goes through the strict kubeadm stand-in.
import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { load, loadAll } from 'js-yaml';
import { parseWith } from '../../src/config/schema/dsl.ts';
import { machineConfigSchema, type MachineConfig } from '../../src/config/schema/index.ts';
import { importClusterApi, UNINITIALIZED_TAINT } from '../../src/capi/import.ts';
import { CAPI_ENV, durationSeconds, type KubeadmShape } from '../../src/capi/kubeadm.ts';
import { applyEnvValues } from '../../src/config/env-values.ts';
import { applyMachineValues } from '../../src/config/machine-values.ts';
import { renderKubeadm, type RenderedKubeadm } from '../../src/kubeadm/render.ts';
import { chooseApi, type KubeadmApi } from '../../src/kubeadm/version.ts';
import { REPO, runRendered } from '../kubeadm/standin.ts';

const FIXTURES = join(REPO, 'test/capi/fixtures');
const fixtures = readdirSync(FIXTURES).filter((f) => f.endsWith('.yaml')).sort();

type Doc = Record<string, any>;

const ENDPOINT = 'cp.cluster.example:6443';
const TOKEN = 'abcdef.0123456789abcdef';
const HASH = `sha256:${'a'.repeat(64)}`;
const KEY = 'b'.repeat(64);
const ENV = { [CAPI_ENV.endpoint]: ENDPOINT, [CAPI_ENV.token]: TOKEN, [CAPI_ENV.caCertHash]: HASH, [CAPI_ENV.certificateKey]: KEY };

// What the machine gives for the instance-data templates the examples use.
const MACHINE = { cloud: 'aws', localHostname: 'ip-10-0-1-5.ec2.internal', instanceName: 'gcp-cp-0', instanceId: 'i-0a1b2c3d4e5f67890', zone: 'us-east-1a', region: 'us-east-1' };
const TEMPLATE_VALUES: Record<string, string> = {
  '{{ ds.meta_data.local_hostname }}': MACHINE.localHostname,
  '{{ ds.meta_data["local_hostname"] }}': MACHINE.localHostname,
  '{{ v1.local_hostname }}': MACHINE.localHostname,
  '{{ local_hostname }}': MACHINE.localHostname,
  '{{ ds.meta_data.local_hostname.split(".")[0] }}': MACHINE.instanceName,
};

/**
 * The one table of what machineadm writes differently from the original (kubeadm field path,
 * relative to the document, -> what happens). Everything else must come out unchanged.
 */
const TRANSLATED: Record<string, string> = {
  apiVersion: 'machineadm writes the kubeadm API the machine\'s kubeadm reads (v1beta3 before v1.31, v1beta4 from it)',
  kind: 'implied by the document',
  kubernetesVersion: 'from KubeadmControlPlane spec.version (CABPK does the same)',
  controlPlaneEndpoint: `from ${CAPI_ENV.endpoint} when the original leaves it to Cluster API`,
  'nodeRegistration.criSocket': "containerd's socket in kubeadm's URL form (unix:///var/run/containerd/containerd.sock)",
  'nodeRegistration.name': 'a cloud-init template becomes the machine value it names ({ fromMachine: ... })',
  'nodeRegistration.kubeletExtraArgs.provider-id': 'a template becomes providerID: auto; on join it goes to the kubelet configuration patch (providerID)',
  'nodeRegistration.kubeletExtraArgs.register-with-taints': 'becomes nodeRegistration.taints (the kubelet flag is deprecated)',
  'nodeRegistration.kubeletExtraArgs.node-labels': 'kept as the flag, labels sorted by key',
  'nodeRegistration.taints': `on a worker, ${UNINITIALIZED_TAINT.key}:${UNINITIALIZED_TAINT.effect} appended, as the kubeadm bootstrap provider does (after machineadm's os=windows:NoSchedule on Windows, when the original has no list); a control plane's as given`,
  'featureGates.ControlPlaneKubeletLocalMode': 'true on a KubeadmControlPlane of Kubernetes 1.31 to 1.35 unless the original sets it, as KubeadmControlPlane does',
  certificateKey: `the first control plane uploads its certificates with ${CAPI_ENV.certificateKey}, with which the others join`,
  'apiServer.timeoutForControlPlane': 'v1beta4: timeouts.controlPlaneComponentHealthCheck of the init document',
  'discovery.timeout': 'v1beta4: timeouts.discovery',
  'discovery.bootstrapToken': `from ${CAPI_ENV.endpoint}, ${CAPI_ENV.token} and ${CAPI_ENV.caCertHash} when Cluster API fills them in`,
  'controlPlane.certificateKey': `from ${CAPI_ENV.certificateKey}`,
  'timeouts.*Seconds': "Cluster API v1beta2's seconds become kubeadm durations (300 -> 0h5m0s)",
  certificateValidityPeriodDays: 'certificateValidityPeriod in hours (kubeadm v1.31 and later)',
  caCertificateValidityPeriodDays: 'caCertificateValidityPeriod in hours (kubeadm v1.31 and later)',
  'patches.directory': "machineadm's own patches directory; the files of the original directory are copied into it with machineadm's kubelet patch",
};

function argMap(value: unknown): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  const pairs = Array.isArray(value) ? value.map((a: { name: string; value: string }) => [a.name, String(a.value)]) : Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, String(v)]);
  return Object.fromEntries(pairs.sort(([a], [b]) => (a! < b! ? -1 : 1)));
}

const resolveTemplate = (value: string) => TEMPLATE_VALUES[value] ?? value;

/** The original's documents as machineadm must render them, per TRANSLATED. */
function expected(spec: Doc, shape: KubeadmShape, api: KubeadmApi, version: string | undefined): Record<string, Doc> {
  const { bootstrap, role, os } = shape;
  const out: Record<string, Doc> = {};
  const strip = (doc: Doc | undefined) => {
    const { apiVersion: _a, kind: _k, ...rest } = structuredClone(doc ?? {});
    return rest as Doc;
  };
  const component = (c: Doc | undefined) => {
    if (c?.extraArgs !== undefined) c.extraArgs = argMap(c.extraArgs);
    if (c?.extraArgs && Object.keys(c.extraArgs).length === 0) delete c.extraArgs;
  };
  const timeouts = (doc: Doc) => {
    if (doc.timeouts === undefined) return;
    doc.timeouts = Object.fromEntries(Object.entries(doc.timeouts as Record<string, number>).map(([k, v]) => [k.replace(/Seconds$/, ''), v]));
  };
  const nodeRegistration = (doc: Doc, join: boolean) => {
    const nr = (doc.nodeRegistration ??= {});
    delete nr.criSocket;
    if (nr.name !== undefined) nr.name = resolveTemplate(nr.name);
    const args = argMap(nr.kubeletExtraArgs) ?? {};
    if (args['register-with-taints'] !== undefined) {
      nr.taints = [...(nr.taints ?? []), ...args['register-with-taints'].split(',').map((t) => {
        const [kv = '', effect] = t.split(':');
        const [key, value] = kv.split('=');
        return { key, ...(value !== undefined ? { value } : {}), effect };
      })];
      delete args['register-with-taints'];
    }
    if (args['provider-id'] !== undefined) {
      if (join) out.KubeletPatch = { providerID: `aws:///${MACHINE.zone}/${MACHINE.instanceId}` };
      else args['provider-id'] = `aws:///${MACHINE.zone}/${MACHINE.instanceId}`;
      if (join) delete args['provider-id'];
    }
    if (args['node-labels'] !== undefined) args['node-labels'] = args['node-labels'].split(',').sort().join(',');
    if (Object.keys(args).length > 0) nr.kubeletExtraArgs = args;
    else delete nr.kubeletExtraArgs;
    if (role === 'control-plane') return;
    const base = nr.taints ?? (os === 'windows' ? [{ key: 'os', value: 'windows', effect: 'NoSchedule' }] : []);
    nr.taints = [...base, { ...UNINITIALIZED_TAINT }];
  };
  if (bootstrap === 'init') {
    const cluster = strip(spec.clusterConfiguration);
    const init = strip(spec.initConfiguration);
    if (version !== undefined) cluster.kubernetesVersion = version;
    cluster.controlPlaneEndpoint ??= ENDPOINT;
    for (const name of ['apiServer', 'controllerManager', 'scheduler']) component(cluster[name]);
    component(cluster.etcd?.local);
    const health = cluster.apiServer?.timeoutForControlPlane;
    if (health !== undefined) {
      if (api === 'v1beta4') {
        delete cluster.apiServer.timeoutForControlPlane;
        init.timeouts = { ...(init.timeouts ?? {}), controlPlaneComponentHealthCheckSeconds: durationSeconds(health) };
      } else cluster.apiServer.timeoutForControlPlane = durationSeconds(health);
      if (cluster.apiServer && Object.keys(cluster.apiServer).length === 0) delete cluster.apiServer;
    }
    for (const key of ['certificateValidityPeriodDays', 'caCertificateValidityPeriodDays']) {
      if (cluster[key] !== undefined) {
        cluster[key.replace('Days', '')] = cluster[key] * 86_400;
        delete cluster[key];
      }
    }
    const minor = Number(/^v1\.(\d+)\./.exec(version ?? '')?.[1]);
    if (minor >= 31 && minor < 36 && cluster.featureGates?.ControlPlaneKubeletLocalMode === undefined) cluster.featureGates = { ...cluster.featureGates, ControlPlaneKubeletLocalMode: true };
    init.certificateKey = KEY;
    nodeRegistration(init, false);
    timeouts(init);
    if (init.patches?.directory !== undefined) init.patches.directory = '/run/machineadm/kubeadm-patches';
    out.ClusterConfiguration = cluster;
    out.InitConfiguration = init;
  } else {
    const doc = strip(spec.joinConfiguration);
    const discovery = doc.discovery ?? {};
    if (discovery.file === undefined) {
      const token = discovery.bootstrapToken ?? {};
      discovery.bootstrapToken = { apiServerEndpoint: token.apiServerEndpoint ?? ENDPOINT, token: token.token ?? TOKEN, caCertHashes: token.caCertHashes ?? [HASH] };
    }
    if (discovery.timeout !== undefined) {
      if (api === 'v1beta4') {
        doc.timeouts = { ...(doc.timeouts ?? {}), discoverySeconds: durationSeconds(discovery.timeout) };
        delete discovery.timeout;
      } else discovery.timeout = durationSeconds(discovery.timeout);
    }
    doc.discovery = discovery;
    if (doc.controlPlane !== undefined) doc.controlPlane = { ...doc.controlPlane, certificateKey: KEY };
    nodeRegistration(doc, true);
    timeouts(doc);
    if (doc.patches?.directory !== undefined) doc.patches.directory = '/run/machineadm/kubeadm-patches';
    out.JoinConfiguration = doc;
  }
  return out;
}

/** Durations compared in seconds (kubeadm reads 20m and 0h20m0s alike). */
function normalise(value: unknown, key: string): unknown {
  if (typeof value === 'string' && /^(timeout|controlPlaneComponentHealthCheck|discovery|etcdAPICall|kubeletHealthCheck|kubernetesAPICall|tlsBootstrap|certificateValidityPeriod|caCertificateValidityPeriod|timeoutForControlPlane)$/.test(key)) return durationSeconds(value) ?? value;
  return value;
}

/** Every leaf of `want` found unchanged in `got`; returns the paths that differ. */
function missing(want: unknown, got: unknown, path: string, key = ''): string[] {
  if (want !== null && typeof want === 'object' && !Array.isArray(want)) {
    if (key === 'extraArgs' || key === 'kubeletExtraArgs') return JSON.stringify(argMap(want)) === JSON.stringify(argMap(got)) ? [] : [`${path}: ${JSON.stringify(want)} != ${JSON.stringify(got)}`];
    return Object.entries(want).flatMap(([k, v]) => missing(v, (got as Doc | undefined)?.[k], path ? `${path}.${k}` : k, k));
  }
  const a = normalise(want, key);
  const b = normalise(got, key);
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [`${path}: ${JSON.stringify(want)} != ${JSON.stringify(got)}`];
}

function prepare(file: string): { original: Doc; spec: Doc; config: MachineConfig; shape: KubeadmShape; os: 'linux' | 'windows'; version?: string } {
  const text = readFileSync(join(FIXTURES, file), 'utf8');
  const original = load(text) as Doc;
  const joining = /^# import: --join$/m.test(text);
  const imported = importClusterApi(original, { source: file, ...(joining ? { join: true } : {}) });
  const parsed = parseWith(machineConfigSchema, imported.config);
  expect(parsed.issues, `${file} imports into an invalid MachineConfig`).toEqual([]);
  const withEnv = applyEnvValues(parsed.value!, ENV).config;
  const given = Object.fromEntries(Object.entries(MACHINE).map(([k, v]) => [k, { value: v, source: 'test' }]));
  const config = applyMachineValues(withEnv, given, 'give NAME').config;
  const spec = original.spec.kubeadmConfigSpec ?? original.spec.template?.spec?.kubeadmConfigSpec ?? original.spec.template?.spec ?? original.spec;
  return { original, spec, config, shape: imported.shape, os: imported.shape.os, ...(original.spec.version ? { version: original.spec.version } : {}) };
}

function render(config: MachineConfig, os: 'linux' | 'windows', api: KubeadmApi): RenderedKubeadm {
  return renderKubeadm({ kubernetes: config.spec.kubernetes!, os, api, cgroupDriver: 'systemd', fallbackKubernetesVersion: 'v1.31.2', secrets: { token: TOKEN, caCertHashes: [HASH], certificateKey: KEY } });
}

describe('Cluster API examples, field by field', () => {
  it('carries at least 15 examples, among them Ignition, IPv6, Windows and external etcd', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(15);
    const texts = fixtures.map((f) => readFileSync(join(FIXTURES, f), 'utf8'));
    for (const needle of ['format: ignition', 'fd00:', 'npipe:', 'external:']) expect(texts.some((t) => t.includes(needle)), needle).toBe(true);
  });

  it.each(fixtures)('%s renders every kubeadm field of the original', (file) => {
    const { spec, config, shape, os, version } = prepare(file);
    const chosen = chooseApi(undefined, config.spec.kubernetes!.version ?? 'v1.31.2').api;
    for (const api of [chosen, chosen === 'v1beta4' ? 'v1beta3' : 'v1beta4'] as KubeadmApi[]) {
      let rendered: RenderedKubeadm;
      try {
        rendered = render(config, os, api);
      } catch (error) {
        // Only the chosen API must take the example; the other may lack a field it uses.
        if (api === chosen) throw error;
        expect(String((error as Error).message)).toMatch(/invalid configuration/);
        continue;
      }
      const docs = Object.fromEntries((loadAll(rendered.config) as Doc[]).map((d) => [d.kind, d]));
      const want = expected(spec, shape, api, version);
      const { KubeletPatch, ...documents } = want;
      const problems = Object.entries(documents).flatMap(([kind, doc]) => missing(doc, docs[kind], kind));
      if (KubeletPatch) {
        const patch = load(rendered.patches[0]?.content ?? '{}') as Doc;
        problems.push(...missing(KubeletPatch, patch, 'kubelet patch'));
      }
      expect(problems, `${file} rendered as ${api}`).toEqual([]);
    }
  });

  it.each(fixtures.filter((f) => !readFileSync(join(FIXTURES, f), 'utf8').includes('npipe:')))('%s is accepted by the strict kubeadm stand-in', (file) => {
    const { config, os } = prepare(file);
    const version = config.spec.kubernetes!.version ?? 'v1.31.2';
    const ran = runRendered(render(config, os, chooseApi(undefined, version).api), version);
    expect(ran.stderr).not.toMatch(/error|unknown field/i);
    expect(ran.status).toBe(0);
  });

  it('documents every translation in the switching guide', () => {
    const guide = readFileSync(join(REPO, 'docs/recipes/cluster-api/switching-from-cabpk.md'), 'utf8');
    for (const field of Object.keys(TRANSLATED)) expect(guide, field).toContain(`\`${field}\``);
  });
});
