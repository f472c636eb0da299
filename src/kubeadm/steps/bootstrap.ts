// The kubeadm/init and kubeadm/join steps: render the configuration (secrets redacted for the
// plan, real for the run), write it 0600 only for the time kubeadm runs, run kubeadm with a
// timeout and retries for transient join failures, and turn a failure into report data.
import type { Step, StepContext, CheckResult, Change, ApplyResult, Undo, UndoContext } from '../../engine/step.ts';
import type { KubernetesSpec, MachineConfig } from '../../config/schema/index.ts';
import { CA_HASH_PATTERN, CERTIFICATE_KEY_PATTERN, TOKEN_PATTERN } from '../../config/schema/kubernetes.ts';
import { REDACTED } from '../../config/secrets.ts';
import { CommandError, ConfigError, StepDetailsError, type ConfigIssue, type FailureDetails } from '../../errors.ts';
import { tail } from '../../host/index.ts';
import { parseKubeadmVersion } from '../../host/facts.ts';
import { chooseApi, type ApiChoice } from '../version.ts';
import { MACHINEADM_PATCH, placeholderSecrets, renderKubeadm, type KubeadmSecrets, type RenderedKubeadm } from '../render.ts';
import { kubeadmPaths, type KubeadmPaths } from '../paths.ts';
import { isTransient, NODE_NAME_TAKEN, parseKubeadmFailure, scrubKubeadmOutput, type KubeadmFailure } from '../output.ts';

/**
 * Test and operations switch: under a scratch --root, run kubeadm with `--rootfs <root>` (kubeadm
 * chroots into it) instead of skipping it. A real kubeadm then works inside that root, which only
 * makes sense when the root is a complete system; the test stand-in honours --rootfs.
 */
export const KUBEADM_ROOTFS_ENV = 'MACHINEADM_KUBEADM_ROOTFS';
export const OUTPUT_TAIL_LINES = 50;
const MAX_BACKOFF_SECONDS = 300;

type Command = 'init' | 'join';

function kubernetesOf(config: MachineConfig): KubernetesSpec | undefined {
  return config.spec.kubernetes;
}

function joinPath(os: 'linux' | 'windows', dir: string, name: string): string {
  return os === 'windows' ? `${dir}\\${name}` : `${dir}/${name}`;
}

function kubeadmUnderRoot(ctx: StepContext): boolean {
  return ctx.host.env[KUBEADM_ROOTFS_ENV] === '1';
}

function rootfsArgs(ctx: StepContext): string[] {
  return ctx.facts.liveRoot ? [] : ['--rootfs', ctx.host.fs.root];
}

function kubeadmArgv(command: Command, k: KubernetesSpec, paths: KubeadmPaths, ctx: StepContext): [string, ...string[]] {
  // --upload-certs with the key from the configuration lets further control planes join with it.
  const upload = command === 'init' && k.certificateKey !== undefined ? ['--upload-certs'] : [];
  // -vv and -vvv on the command line win over spec.kubernetes.verbosity.
  const cli = kubeadmVerbosity(ctx);
  const verbosity = cli.length > 0 ? cli : k.verbosity !== undefined ? [`--v=${k.verbosity}`] : [];
  return ['kubeadm', command, '--config', paths.configFile(command), ...upload, ...rootfsArgs(ctx), ...verbosity];
}

/**
 * kubeadm's own log level at machineadm's higher verbosity: -vv gives --v=5 (kubeadm's level for
 * debugging a join), -vvv --v=6 (also each API request's URL). Higher levels print request
 * headers and bodies, which carry the bootstrap token: never passed.
 */
export function kubeadmVerbosity(ctx: Pick<StepContext, 'options'>): string[] {
  const level = ctx.options.verbosity ?? 0;
  return level >= 3 ? ['--v=6'] : level === 2 ? ['--v=5'] : [];
}

function render(ctx: StepContext, k: KubernetesSpec, choice: ApiChoice, secrets: KubeadmSecrets, kubeadmVersion: string | undefined): RenderedKubeadm {
  return renderKubeadm({
    kubernetes: k,
    os: ctx.facts.os,
    api: choice.api,
    kubeletPatches: choice.kubeletPatches,
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
const shown = new WeakMap<object, WeakMap<object, RenderedKubeadm>>();

function renderShown(ctx: StepContext, k: KubernetesSpec, choice: ApiChoice): RenderedKubeadm {
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

function chooseOrFail(kubeadmVersion: string | undefined, k: KubernetesSpec): ApiChoice {
  try {
    return chooseApi(kubeadmVersion, k.version);
  } catch (cause) {
    throw new StepDetailsError((cause as Error).message, { kubeadmVersion }, { hint: 'install kubeadm v1.22 or newer (v1.31 or newer writes kubeadm.k8s.io/v1beta4)' });
  }
}

async function readSecrets(ctx: StepContext, k: KubernetesSpec): Promise<KubeadmSecrets> {
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

function secretValues(secrets: KubeadmSecrets): string[] {
  return [secrets.token, secrets.certificateKey, ...secrets.caCertHashes].filter((v): v is string => v !== undefined);
}

/**
 * Steps that never install, replace or hide kubeadm (nor change where it is looked for). The
 * version the facts read at the run's start stands when, in this run, only these changed the
 * machine before kubeadm's turn, and no spec.files target is named kubeadm: asking again costs a
 * kubeadm start on the boot's critical path. Any other step that changed something (boot commands,
 * disks and mounts, the commands before kubeadm, the Windows steps) makes it ask again.
 */
const LEAVE_KUBEADM = new Set([
  'prepare/kernel-modules/load',
  'prepare/kernel-modules/file',
  'prepare/sysctls/apply',
  'prepare/sysctls/file',
  'prepare/users',
  'prepare/files',
  'prepare/time-servers/file',
  'prepare/time-servers/restart',
  'prepare/containerd/config',
  'prepare/containerd/registries',
  'prepare/containerd/proxy',
  'prepare/containerd/restart',
  'provision/domain/join',
]);

/** Whether this run may have put another kubeadm in place since the facts asked for its version. */
function kubeadmMayHaveChanged(ctx: StepContext): boolean {
  if (ctx.facts.kubeadmVersion === undefined || ctx.facts.os !== 'linux') return true;
  if ((ctx.config.spec.files ?? []).some((f) => /(^|\/)kubeadm$/.test(f.path))) return true;
  return ctx.run.phases.some((phase) => phase.steps.some((s) => s.result !== 'skipped' && !LEAVE_KUBEADM.has(s.id)));
}

async function currentKubeadmVersion(ctx: StepContext): Promise<string | undefined> {
  if (!kubeadmMayHaveChanged(ctx)) return ctx.facts.kubeadmVersion;
  // The facts were read before the prepare phase, which may have installed or replaced kubeadm.
  const result = await ctx.host.proc.run(['kubeadm', 'version', '-o', 'short'], { timeoutMs: 15_000, allowFailure: true }).catch(() => undefined);
  return result && result.exitCode === 0 ? parseKubeadmVersion(result.stdout) : ctx.facts.kubeadmVersion;
}

async function kubeletLogTail(ctx: StepContext, known: string[]): Promise<string | undefined> {
  if (ctx.facts.os !== 'linux' || !(await ctx.host.proc.which('journalctl'))) return undefined;
  const argv: [string, ...string[]] = ['journalctl', ...(ctx.facts.liveRoot ? [] : ['--root', ctx.host.fs.root]), '-u', 'kubelet', '-n', String(OUTPUT_TAIL_LINES), '--no-pager'];
  const result = await ctx.host.proc.run(argv, { timeoutMs: 15_000, allowFailure: true }).catch(() => undefined);
  if (!result || result.exitCode !== 0) return undefined;
  const lines = result.stdout.split('\n').filter((l) => l.trim() !== '' && !/^-- No entries --$/.test(l.trim()));
  if (lines.length === 0) return undefined;
  return tail(lines.map((l) => scrubKubeadmOutput(l, known)).join('\n'), OUTPUT_TAIL_LINES);
}

function hintFor(failure: KubeadmFailure, timedOut: boolean): string {
  if (NODE_NAME_TAKEN.test(failure.message ?? '')) {
    return 'another machine is registered under this node name: delete that Node (kubectl delete node NAME) if it is gone, or set spec.kubernetes.node.name';
  }
  if (timedOut) return 'kubeadm did not finish in spec.kubernetes.timeoutSeconds: check that the control plane is reachable and the kubelet starts (kubeletLogTail)';
  switch (failure.phase?.split('/')[0]) {
    case undefined:
      return 'kubeadm refused its configuration or flags before starting: the output names the field; check the kubeadm version against spec.kubernetes.version';
    case 'preflight':
      return 'fix what the preflight output lists (an unreachable API server, a wrong token or CA hash, or leftovers of an earlier join: run again with --force to reset first)';
    case 'kubelet-start':
    case 'kubelet-wait-bootstrap':
      return 'the kubelet did not start or did not finish its TLS bootstrap: read kubeletLogTail, and check that containerd runs and its cgroup driver matches';
    default:
      return 'read the output tail; after fixing the cause run machineadm again with --force (it resets the half-done node first)';
  }
}

/**
 * The first file a kubeadm run writes that is on the machine (a kubeadm ran here, finished or
 * not), leaving out what spec.files writes (a control plane's certificates brought as files).
 */
async function kubeadmLeftover(ctx: StepContext, command: Command, paths: KubeadmPaths): Promise<string | undefined> {
  // A plan for another operating system (--os, --facts) cannot look at that machine's files.
  if (ctx.host.fs.platform !== ctx.facts.os) return undefined;
  const written = new Set((ctx.config.spec.files ?? []).map((f) => f.path));
  for (const file of paths.takenFiles(command, kubernetesOf(ctx.config)!.role === 'control-plane')) {
    if (!written.has(file) && (await ctx.host.fs.exists(file))) return file;
  }
  return undefined;
}

// What kubeadm join --control-plane needs from the cluster when it cannot download it with a
// certificate key (kubeadm's CheckSharedCertificates): the CAs, the service-account key pair and,
// for a local etcd, etcd's CA. Files written by spec.files count: they exist before kubeadm runs.
const SHARED_CERTIFICATES = ['ca.crt', 'ca.key', 'sa.key', 'sa.pub', 'front-proxy-ca.crt', 'front-proxy-ca.key'];

async function missingCertificates(ctx: StepContext, k: KubernetesSpec, paths: KubeadmPaths): Promise<string[]> {
  if (k.bootstrap !== 'join' || k.role !== 'control-plane' || k.certificateKey !== undefined) return [];
  if (ctx.host.fs.platform !== ctx.facts.os) return [];
  const written = new Set((ctx.config.spec.files ?? []).map((f) => f.path));
  const missing: string[] = [];
  for (const name of SHARED_CERTIFICATES) {
    const file = `${paths.pkiDir}/${name}`;
    if (!written.has(file) && !(await ctx.host.fs.exists(file))) missing.push(file);
  }
  return missing;
}

/** Names of the patch files the user keeps in spec.kubernetes.patchesDirectory: on disk, or written by spec.files. */
async function userPatches(ctx: StepContext, dir: string): Promise<string[]> {
  const fromFiles = (ctx.config.spec.files ?? []).filter((f) => f.path.startsWith(`${dir}/`) && !f.path.slice(dir.length + 1).includes('/')).map((f) => f.path.slice(dir.length + 1));
  const onDisk = ctx.host.fs.platform === ctx.facts.os ? await ctx.host.fs.list(dir).catch(() => [] as string[]) : [];
  return [...new Set([...onDisk, ...fromFiles])].sort();
}

/** Why kubeadm must not run: its files are here and machineadm did not start them (no --force). */
function leftoverRefusal(ctx: StepContext, leftover: string | undefined): string | undefined {
  if (leftover === undefined || ctx.options.force || ctx.startedBefore) return undefined;
  return `${leftover} exists but machineadm has no record of joining this machine`;
}

const LEFTOVER_HINT = 'the machine was joined another way or an earlier kubeadm stopped halfway; run again with --force to reset it (kubeadm reset -f) and join';

function planChanges(ctx: StepContext, command: Command, k: KubernetesSpec, paths: KubeadmPaths, choice: ApiChoice, rendered: RenderedKubeadm, leftover: string | undefined): Change[] {
  const changes: Change[] = [
    ...paths.privateDirs.map((dir) => ({ action: 'create', target: dir, detail: 'directory with an ACL for SYSTEM and Administrators only (protected), before any secret is written' })),
    { action: 'write', target: paths.configFile(command), detail: `${rendered.apiVersion} for ${choice.basedOn}; mode 0600, removed after kubeadm ran`, diff: rendered.config },
    ...rendered.patches.map((p) => ({ action: 'write', target: joinPath(ctx.facts.os, rendered.patchesDir, p.name), detail: 'kubelet settings for this node (kubeadm patch)', diff: p.content })),
  ];
  if (k.patchesDirectory !== undefined) changes.push({ action: 'copy', target: rendered.patchesDir, detail: `kubeadm patch files from ${k.patchesDirectory}` });
  if (leftover !== undefined) {
    changes.push(
      ctx.options.force || ctx.startedBefore
        ? { action: 'run', target: `kubeadm reset -f --cri-socket ${paths.criSocket}`, detail: `${ctx.options.force ? '--force' : 'an earlier run stopped during this step'}: ${leftover} exists, the node is reset first` }
        : { action: 'refuse', target: leftover, detail: 'exists without a record of machineadm joining: run with --force to reset and join again' },
    );
  }
  const retries = command === 'join' && k.retries > 0 ? `, up to ${k.retries} retries after transient failures` : '';
  changes.push({ action: 'run', target: kubeadmArgv(command, k, paths, ctx).join(' '), detail: `timeout ${k.timeoutSeconds}s${retries}` });
  return changes;
}

export function kubeadmStep(command: Command): Step {
  return {
    id: `kubeadm/${command}`,
    summary: command === 'init' ? 'kubeadm init: the first control plane' : 'kubeadm join: join the cluster',
    applies: (config) => kubernetesOf(config)?.bootstrap === command,
    // A token file holding something else is found before prepare changes anything.
    async preflight(ctx) {
      const k = kubernetesOf(ctx.config)!;
      const issues: ConfigIssue[] = [];
      await readSecrets(ctx, k).catch((error: unknown) => {
        if (!(error instanceof ConfigError)) throw error;
        issues.push(...error.issues);
      });
      const paths = kubeadmPaths(ctx.facts.os);
      const certificates = await missingCertificates(ctx, k, paths);
      if (certificates.length > 0) {
        issues.push({
          path: 'spec.kubernetes.certificateKey',
          message: `a control-plane join needs the certificate key, or the cluster's certificates as files (missing: ${certificates.join(', ')})`,
          hint: 'give the key "kubeadm init phase upload-certs --upload-certs" printed, or write the certificates with spec.files (Cluster API\'s KubeadmControlPlane does)',
        });
      }
      if (k.patchesDirectory !== undefined && (await userPatches(ctx, k.patchesDirectory)).includes(MACHINEADM_PATCH)) {
        issues.push({ path: 'spec.kubernetes.patchesDirectory', message: `${k.patchesDirectory}/${MACHINEADM_PATCH} has the name of machineadm's own kubelet patch`, hint: 'rename it, e.g. kubeletconfiguration0+merge.yaml (kubeadm applies patches of one target in name order)' });
      }
      const joined = ctx.previous?.data?.joined === true && ctx.host.fs.platform === ctx.facts.os && (await ctx.host.fs.exists(paths.kubeletConf));
      // kubeadm that does not run here (a scratch --root) refuses nothing.
      const runs = ctx.facts.liveRoot || kubeadmUnderRoot(ctx);
      const refusal = !runs || (joined && !ctx.options.force) ? undefined : leftoverRefusal(ctx, await kubeadmLeftover(ctx, command, paths));
      if (refusal) issues.push({ path: `spec.kubernetes.bootstrap`, message: `kubeadm ${command}: ${refusal}`, hint: LEFTOVER_HINT, refused: true });
      if (issues.length) throw new ConfigError(issues);
    },
    recordsStart: true,
    undoRecord: kubeadmUndoRecord,
    undo: kubeadmUndo,
    leftovers(facts) {
      const paths = kubeadmPaths(facts.os);
      return [paths.configFile(command), paths.patchesDir];
    },

    async check(ctx): Promise<CheckResult> {
      const k = kubernetesOf(ctx.config)!;
      const paths = kubeadmPaths(ctx.facts.os);
      // A plan for another operating system (--os, --facts) cannot look at that machine's files.
      const hasKubeletConf = ctx.host.fs.platform === ctx.facts.os && (await ctx.host.fs.exists(paths.kubeletConf));
      if (ctx.previous?.data?.joined === true && hasKubeletConf && !ctx.options.force) return { done: true, changes: [] };
      const choice = chooseOrFail(ctx.facts.kubeadmVersion, k);
      const rendered = renderShown(ctx, k, choice);
      const changes = planChanges(ctx, command, k, paths, choice, rendered, await kubeadmLeftover(ctx, command, paths));
      if (!ctx.facts.liveRoot && !kubeadmUnderRoot(ctx)) {
        return { done: false, changes, skipReason: `kubeadm ${command} changes the live machine: not run under --root ${ctx.host.fs.root} (${KUBEADM_ROOTFS_ENV}=1 runs it with --rootfs)` };
      }
      return { done: false, changes };
    },

    async apply(ctx): Promise<ApplyResult> {
      const k = kubernetesOf(ctx.config)!;
      const { fs, proc } = ctx.host;
      const paths = kubeadmPaths(ctx.facts.os);
      if (!(await proc.which('kubeadm'))) {
        throw new StepDetailsError('kubeadm is not installed (not found on PATH)', {}, { hint: 'install kubeadm and the kubelet (for example from pkgs.k8s.io) before the provision phase' });
      }
      // A join that an earlier run of machineadm started and never finished is its own to redo;
      // the preflight refused any other (this finds what appeared since).
      const leftover = await kubeadmLeftover(ctx, command, paths);
      const refusal = leftoverRefusal(ctx, leftover);
      if (refusal) throw new StepDetailsError(refusal, {}, { hint: LEFTOVER_HINT });
      const kubeadmVersion = await currentKubeadmVersion(ctx);
      const choice = chooseOrFail(kubeadmVersion, k);
      const secrets = await readSecrets(ctx, k);
      const known = secretValues(secrets);
      const rendered = render(ctx, k, choice, secrets, kubeadmVersion);
      const configFile = paths.configFile(command);
      const argv = kubeadmArgv(command, k, paths, ctx);
      const reset = async (): Promise<void> => {
        // The socket is named because a half-joined node has no Node object to read it from, and
        // kubeadm's own detection fails when a second runtime's socket exists.
        const result = await proc
          .run(['kubeadm', 'reset', '-f', '--cri-socket', paths.criSocket, ...rootfsArgs(ctx)], { timeoutMs: 5 * 60_000, allowFailure: true, onLine: (line) => ctx.output(scrubKubeadmOutput(line, known)) })
          .catch((error: unknown) => ({ exitCode: -1, error }));
        // A reset that fails is reported; the next kubeadm run says what it left behind.
        if (result.exitCode !== 0) ctx.log(`kubeadm reset -f did not succeed (exit code ${result.exitCode})`, 'warning');
      };

      if (paths.privateDirs.length > 0) {
        const windows = ctx.host.windows;
        if (!windows) throw new StepDetailsError('the private directories for kubeadm cannot be created: no Windows seam on this machine', {}, { hint: 'run machineadm on the Windows machine itself' });
        // Locked before the first secret byte: what kubeadm and machineadm write in them inherits it.
        for (const dir of paths.privateDirs) await windows.createPrivateDirectory(dir);
      }
      await fs.mkdirp(paths.runDir, 0o700);
      try {
        // Read by kubeadm now and removed after it (a crash leaves them to the next run's cleanup):
        // nothing to keep across a power cut, so no flush to disk.
        const transient = { mode: 0o600, backup: false, durable: false } as const;
        await fs.writeFile(configFile, rendered.config, transient);
        for (const patch of rendered.patches) await fs.writeFile(joinPath(ctx.facts.os, rendered.patchesDir, patch.name), patch.content, transient);
        if (k.patchesDirectory !== undefined) {
          // kubeadm refuses a patches directory that does not exist, also an empty one's absence.
          await fs.mkdirp(rendered.patchesDir, 0o700);
          for (const name of await userPatches(ctx, k.patchesDirectory)) {
            const content = await fs.readFile(joinPath(ctx.facts.os, k.patchesDirectory, name));
            if (content !== undefined) await fs.writeFile(joinPath(ctx.facts.os, rendered.patchesDir, name), content, transient);
          }
        }
        if (leftover !== undefined) {
          ctx.log(`${ctx.options.force ? '--force' : 'an earlier run stopped during this step'}: resetting the node first (${leftover} exists)`);
          await reset();
        }
        const attempts = command === 'join' ? 1 + k.retries : 1;
        for (let attempt = 1; ; attempt++) {
          const lines: string[] = [];
          let exitCode: number | undefined;
          let timedOut = false;
          try {
            const result = await proc.run(argv, {
              timeoutMs: k.timeoutSeconds * 1000,
              allowFailure: true,
              onLine: (line) => {
                const clean = scrubKubeadmOutput(line, known);
                lines.push(clean);
                ctx.output(clean);
              },
            });
            exitCode = result.exitCode;
          } catch (error) {
            // Timed out or killed by a signal: the error's own text holds kubeadm's raw output
            // (which can carry a token kubeadm made up), so it is reported from the scrubbed lines.
            // A kubeadm that could not start printed nothing; its error names the reason.
            if (!(error instanceof CommandError) || (!error.timedOut && error.commandExitCode === undefined && lines.length === 0)) throw error;
            timedOut = error.timedOut;
            exitCode = error.commandExitCode;
          }
          if (exitCode === 0 && !timedOut) {
            if (!(await fs.exists(paths.kubeletConf))) {
              // Not joined, whatever kubeadm's exit code says: the kubelet has no credentials.
              throw new StepDetailsError(`kubeadm ${command} exited 0 but did not write ${paths.kubeletConf}: the node did not join`, {
                kubeadmCommand: `kubeadm ${command}`,
                exitCode: 0,
                attempts: attempt,
                apiVersion: rendered.apiVersion,
                ...(kubeadmVersion ? { kubeadmVersion } : {}),
                outputTail: tail(lines.join('\n'), OUTPUT_TAIL_LINES),
              }, { hint: 'read the output tail; check that nothing removed the file and that kubeadm ran against this root, then run again with --force' });
            }
            // joinedAt tells this kubeadm run from a later one (spec.commands.afterKubeadm runs once per join).
            return { record: { joined: true, joinedAt: ctx.host.now().toISOString(), command, role: k.role, apiVersion: rendered.apiVersion, kubeadmVersion, attempts: attempt } };
          }
          const failure = parseKubeadmFailure(lines);
          const transient = isTransient(failure, lines, timedOut);
          if (transient && attempt < attempts) {
            const delay = Math.min(MAX_BACKOFF_SECONDS, k.backoffSeconds * 2 ** (attempt - 1));
            ctx.log(`kubeadm ${command} failed in phase ${failure.phase ?? '(none)'} (attempt ${attempt} of ${attempts}); transient: resetting and retrying in ${delay}s`, 'warning');
            await reset();
            await ctx.host.sleep(delay * 1000);
            continue;
          }
          const details: FailureDetails = {
            kubeadmCommand: `kubeadm ${command}`,
            ...(failure.phase !== undefined ? { kubeadmPhase: failure.phase } : {}),
            ...(exitCode !== undefined ? { exitCode } : {}),
            timedOut,
            transient,
            attempts: attempt,
            apiVersion: rendered.apiVersion,
            ...(kubeadmVersion ? { kubeadmVersion } : {}),
            outputTail: tail(lines.join('\n'), OUTPUT_TAIL_LINES),
          };
          const kubeletLog = await kubeletLogTail(ctx, known);
          if (kubeletLog !== undefined) details.kubeletLogTail = kubeletLog;
          const where = failure.phase !== undefined ? `in phase ${failure.phase}` : 'before any phase';
          const how = timedOut ? `timed out after ${k.timeoutSeconds}s` : exitCode !== undefined ? `exit code ${exitCode}` : 'killed by a signal';
          const tries = attempt > 1 ? `, ${attempt} attempts` : '';
          const cause = failure.message ? `: ${failure.message}` : '';
          throw new StepDetailsError(`kubeadm ${command} failed ${where} (${how}${tries})${cause}`, details, { hint: hintFor(failure, timedOut) });
        }
      } finally {
        // The file holds the token: it never outlives the kubeadm run, also on failure.
        await fs.remove(configFile);
        if (rendered.patches.length > 0 || k.patchesDirectory !== undefined) await fs.remove(rendered.patchesDir);
      }
    },
  };
}

/** Folders kubeadm and the kubelet make on Linux (with their parents): those that were not there before the first join go after reset. */
const KUBEADM_DIRS = ['/etc/kubernetes/manifests', '/etc/kubernetes/pki', '/etc/kubernetes/tmp', '/var/lib/kubelet', '/var/lib/etcd', '/etc/cni/net.d'];
/** kubeadm reset leaves the CNI configuration and says to remove it: reset removes what was not there before. */
const CNI_DIR = '/etc/cni/net.d';

function withParents(dirs: readonly string[]): string[] {
  const all = new Set<string>();
  for (const dir of dirs) for (let d = dir; d !== '/' && d !== ''; d = d.slice(0, d.lastIndexOf('/')) || '/') all.add(d);
  return [...all].sort((a, b) => b.length - a.length);
}

/** What reset would do after kubeadm: CNI files and folders that were not there before the first join. */
async function kubeadmLeavings(ctx: UndoContext): Promise<{ cni: string[]; dirs: string[] }> {
  const { fs } = ctx.host;
  const dirsBefore = (ctx.undoRecord?.dirs ?? {}) as Record<string, string>;
  const cniBefore = (ctx.undoRecord?.cni ?? {}) as Record<string, string>;
  const cni = ctx.undoRecord ? (await fs.list(CNI_DIR)).filter((n) => !(n in cniBefore)).map((n) => `${CNI_DIR}/${n}`) : [];
  const dirs: string[] = [];
  for (const dir of withParents(KUBEADM_DIRS)) if (dirsBefore[dir] === 'absent' && (await fs.exists(dir))) dirs.push(dir);
  return { cni, dirs };
}

const kubeadmUndo: Undo = {
  summary: 'kubeadm reset: the node leaves the cluster, the kubelet stops, kubeadm\'s files, the CNI configuration and the folders made for them go',
  async check(ctx) {
    // Only a node machineadm joined (or began to join) is reset.
    if (ctx.done?.data?.joined !== true && ctx.undoRecord === undefined) return { done: true, changes: [] };
    if (ctx.host.fs.platform !== ctx.facts.os) return { done: false, changes: [{ action: 'run', target: 'kubeadm reset -f' }] };
    const paths = kubeadmPaths(ctx.facts.os);
    const taken: string[] = [];
    for (const file of new Set([...paths.takenFiles('init', true), ...paths.takenFiles('join', false)])) if (await ctx.host.fs.exists(file)) taken.push(file);
    const { cni, dirs } = await kubeadmLeavings(ctx);
    const changes: Change[] = [];
    if (taken.length) changes.push({ action: 'run', target: ['kubeadm', 'reset', '-f', '--cri-socket', paths.criSocket, ...rootfsArgs(ctx)].join(' '), detail: `${taken.join(', ')} ${taken.length === 1 ? 'is' : 'are'} there; kubeadm stops the kubelet and empties its folders` });
    for (const file of cni) changes.push({ action: 'delete', target: file, detail: 'CNI configuration (kubeadm reset leaves it)' });
    for (const dir of dirs) changes.push({ action: 'delete', target: `${dir}/`, detail: 'folder that was not there before the first join' });
    if (changes.length === 0) return { done: true, changes };
    if (!ctx.facts.liveRoot && !kubeadmUnderRoot(ctx)) return { done: false, changes, skipReason: `kubeadm reset changes the live machine: not run under --root ${ctx.host.fs.root} (${KUBEADM_ROOTFS_ENV}=1 runs it with --rootfs)` };
    return { done: false, changes };
  },
  async apply(ctx, check) {
    const { fs, proc } = ctx.host;
    const paths = kubeadmPaths(ctx.facts.os);
    if (check.changes.some((c) => c.action === 'run')) {
      if (!(await proc.which('kubeadm'))) throw new StepDetailsError('kubeadm is not installed (not found on PATH): the node cannot be reset', {}, { hint: 'install kubeadm again, or run "kubeadm reset -f" yourself and then machineadm reset' });
      const lines: string[] = [];
      const result = await proc.run(['kubeadm', 'reset', '-f', '--cri-socket', paths.criSocket, ...rootfsArgs(ctx)], {
        timeoutMs: 5 * 60_000,
        allowFailure: true,
        onLine: (line) => {
          lines.push(line);
          ctx.output(line);
        },
      });
      if (result.exitCode !== 0) {
        const failure = parseKubeadmFailure(lines);
        throw new StepDetailsError(`kubeadm reset -f failed${failure.phase ? ` in phase ${failure.phase}` : ''} (exit code ${result.exitCode})${failure.message ? `: ${failure.message}` : ''}`, { kubeadmCommand: 'kubeadm reset', exitCode: result.exitCode, outputTail: tail(lines.join('\n'), OUTPUT_TAIL_LINES) }, { hint: 'read the output tail, fix the cause and run machineadm reset again' });
      }
    }
    const { cni, dirs } = await kubeadmLeavings(ctx);
    for (const file of cni) await fs.remove(file);
    for (const dir of dirs) if (!(await fs.removeFolderIfEmpty(dir))) ctx.log(`${dir}: left in place, something else is in it`, 'warning');
  },
};

/** Which of kubeadm's folders, and which CNI files, were there before kubeadm first ran (Linux). */
async function kubeadmUndoRecord(ctx: StepContext): Promise<Record<string, unknown> | undefined> {
  if (ctx.host.fs.platform !== ctx.facts.os || ctx.facts.os !== 'linux') return undefined;
  const dirs: Record<string, string> = {};
  for (const dir of withParents(KUBEADM_DIRS)) dirs[dir] = (await ctx.host.fs.exists(dir)) ? 'present' : 'absent';
  const cni = Object.fromEntries((await ctx.host.fs.list(CNI_DIR)).map((n) => [n, 'present']));
  // An empty map still marks that the record was taken.
  return { dirs, cni };
}

export const kubeadmInitStep = kubeadmStep('init');
export const kubeadmJoinStep = kubeadmStep('join');
