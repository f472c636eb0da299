// What the kubeadm steps give kubeadm: its command line, the configuration rendered for this
// machine (real secrets for the run, placeholders for the plan, rendered once per check) and the
// secrets read when the step runs.
import { binaryDirectory, inFolder } from '../../config/install-layout.ts';
import type { StepContext } from '../../engine/step.ts';
import type { KubernetesSpec, MachineConfig } from '../../config/schema/index.ts';
import { CA_HASH_PATTERN, CERTIFICATE_KEY_PATTERN, KUBEADM_MAX_VERBOSITY, TOKEN_PATTERN } from '../../config/schema/kubernetes.ts';
import { REDACTED } from '../../config/secrets.ts';
import { ConfigError, StepDetailsError, type ConfigIssue } from '../../errors.ts';
import { chooseApi, type ApiChoice } from '../version.ts';
import { placeholderSecrets, renderKubeadm, type KubeadmSecrets, type RenderedKubeadm } from '../render.ts';
import { type KubeadmPaths } from '../paths.ts';

/**
 * Test and operations switch: under a scratch --root, run kubeadm with `--rootfs <root>` (kubeadm
 * chroots into it) instead of skipping it. A real kubeadm then works inside that root, which only
 * makes sense when the root is a complete system; the test stand-in honours --rootfs.
 */
export const KUBEADM_ROOTFS_ENV = 'MACHINEADM_KUBEADM_ROOTFS';

/** The lines of kubeadm's (and the kubelet's) output a failure keeps. */
export const OUTPUT_TAIL_LINES = 50;

export type Command = 'init' | 'join';

export function kubernetesOf(config: MachineConfig): KubernetesSpec | undefined {
  return config.spec.kubernetes;
}

export function joinPath(os: 'linux' | 'windows', dir: string, name: string): string {
  return os === 'windows' ? `${dir}\\${name}` : `${dir}/${name}`;
}

export function kubeadmUnderRoot(ctx: StepContext): boolean {
  return ctx.host.env[KUBEADM_ROOTFS_ENV] === '1';
}

export function rootfsArgs(ctx: StepContext): string[] {
  return ctx.facts.liveRoot ? [] : ['--rootfs', ctx.host.fs.root];
}

/**
 * The kubeadm a run uses: the one spec.kubernetes.install put in place (its directory, /opt/bin on
 * an immutable image, may not be on machineadm's PATH), else kubeadm on PATH. Under a scratch
 * --root the machine's files are not the programs that run: kubeadm on PATH.
 */
export function kubeadmProgram(ctx: StepContext): string {
  if (!ctx.host.fs.isLiveRoot) return 'kubeadm';
  // What install put in place, from its record: reset finds it there too, without the configuration.
  const installed = Object.keys((ctx.recordOf('kubernetes/install')?.data?.files as Record<string, string> | undefined) ?? {}).find((path) => /[\\/]kubeadm(\.exe)?$/.test(path));
  if (installed) return installed;
  if (!ctx.config.spec.kubernetes?.install?.binaries.includes('kubeadm')) return 'kubeadm';
  const os = ctx.facts.os;
  return inFolder(binaryDirectory(ctx.config, os, false), os === 'windows' ? 'kubeadm.exe' : 'kubeadm', os);
}

/**
 * The kubeadm this machine has, as a path or a name on PATH, or undefined. On Windows the node
 * archive puts kubeadm.exe beside kubelet.exe (C:\\k), a folder seldom on PATH: looked for there too.
 */
export async function kubeadmFound(ctx: StepContext): Promise<string | undefined> {
  const first = kubeadmProgram(ctx);
  if (await ctx.host.proc.which(first)) return first;
  if (ctx.facts.os !== 'windows') return undefined;
  const beside = inFolder(binaryDirectory(ctx.config, 'windows', false), 'kubeadm.exe', 'windows');
  return (await ctx.host.proc.which(beside)) ? beside : undefined;
}

export function kubeadmArgv(command: Command, k: KubernetesSpec, paths: KubeadmPaths, ctx: StepContext, program = kubeadmProgram(ctx)): [string, ...string[]] {
  // --upload-certs with the key from the configuration lets further control planes join with it.
  const upload = command === 'init' && k.certificateKey !== undefined ? ['--upload-certs'] : [];
  // -vv and -vvv on the command line win over spec.kubernetes.verbosity.
  const cli = kubeadmVerbosity(ctx);
  const verbosity = cli.length > 0 ? cli : k.verbosity !== undefined ? [`--v=${k.verbosity}`] : [];
  return [program, command, '--config', paths.configFile(command), ...upload, ...rootfsArgs(ctx), ...verbosity];
}

/**
 * kubeadm's own log level at machineadm's higher verbosity: -vv gives --v=5 (kubeadm's level for
 * debugging a join), -vvv the highest level spec.kubernetes.verbosity takes too (--v=6: also each
 * API request's URL). Higher levels print request headers and bodies, which carry the bootstrap
 * token: never passed.
 */
export function kubeadmVerbosity(ctx: Pick<StepContext, 'options'>): string[] {
  const level = ctx.options.verbosity ?? 0;
  return level >= 3 ? [`--v=${KUBEADM_MAX_VERBOSITY}`] : level === 2 ? ['--v=5'] : [];
}

export function render(ctx: StepContext, k: KubernetesSpec, choice: ApiChoice, secrets: KubeadmSecrets, kubeadmVersion: string | undefined): RenderedKubeadm {
  return renderKubeadm({
    kubernetes: k,
    os: ctx.facts.os,
    api: choice.api,
    kubeletPatches: choice.kubeletPatches,
    ...(choice.minor !== undefined ? { kubeadmMinor: choice.minor } : {}),
    cgroupDriver: ctx.config.spec.containerd?.cgroupDriver ?? 'systemd',
    ...(kubeadmVersion ? { fallbackKubernetesVersion: kubeadmVersion } : {}),
    secrets,
  });
}

/**
 * What a check shows: the configuration rendered with placeholders for its secrets. The same for
 * the same configuration and facts, it is made in the run's preflight and again in the step's
 * check (a plan's too): rendered once (js-yaml's dump, 1.5-3 ms) and shared, read-only.
 */
export const shown = new WeakMap<object, WeakMap<object, RenderedKubeadm>>();

export function renderShown(ctx: StepContext, k: KubernetesSpec, choice: ApiChoice): RenderedKubeadm {
  let byFacts = shown.get(ctx.config);
  if (!byFacts) shown.set(ctx.config, (byFacts = new WeakMap()));
  let rendered = byFacts.get(ctx.facts);
  if (!rendered) {
    rendered = render(ctx, k, choice, placeholderSecrets(k, REDACTED), ctx.facts.kubeadmVersion);
    for (const patch of rendered.patches) Object.freeze(patch);
    Object.freeze(rendered.patches);
    byFacts.set(ctx.facts, Object.freeze(rendered));
  }
  return rendered;
}

export function chooseOrFail(kubeadmVersion: string | undefined, k: KubernetesSpec): ApiChoice {
  try {
    return chooseApi(kubeadmVersion, k.version);
  } catch (cause) {
    throw new StepDetailsError((cause as Error).message, { kubeadmVersion }, { hint: 'install kubeadm v1.22 or newer (v1.31 or newer writes kubeadm.k8s.io/v1beta4)' });
  }
}

export async function readSecrets(ctx: StepContext, k: KubernetesSpec): Promise<KubeadmSecrets> {
  // Values read through valueFrom are checked here; literals were checked at validation time.
  // Every one is read, and every problem reported together.
  const issues: ConfigIssue[] = [];
  const read = async (source: NonNullable<KubernetesSpec['token']>, field: string, pattern: RegExp, what: string): Promise<string> => {
    const value = await ctx.secret(source, field).then(
      (v) => v.trim(),
      (error: unknown) => {
        if (!(error instanceof ConfigError)) throw error;
        issues.push(...error.issues);
        return undefined;
      },
    );
    if (value !== undefined && !pattern.test(value)) issues.push({ path: field, message: `the value read is not ${what}`, hint: 'check the file or variable it comes from' });
    return value ?? '';
  };
  const secrets: KubeadmSecrets = { caCertHashes: [] };
  if (k.token !== undefined) secrets.token = await read(k.token, 'spec.kubernetes.token', TOKEN_PATTERN, 'a bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})');
  for (const [i, source] of (k.caCertHashes ?? []).entries()) {
    secrets.caCertHashes.push(await read(source, `spec.kubernetes.caCertHashes[${i}]`, CA_HASH_PATTERN, 'a CA hash (sha256:<64 hex>)'));
  }
  if (k.certificateKey !== undefined) secrets.certificateKey = await read(k.certificateKey, 'spec.kubernetes.certificateKey', CERTIFICATE_KEY_PATTERN, 'a certificate key (64 hex digits)');
  if (issues.length) throw new ConfigError(issues);
  return secrets;
}

export function secretValues(secrets: KubeadmSecrets): string[] {
  return [secrets.token, secrets.certificateKey, ...secrets.caCertHashes].filter((v): v is string => v !== undefined);
}
