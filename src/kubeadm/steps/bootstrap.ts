// The kubeadm/init and kubeadm/join steps: render the configuration (secrets redacted for the
// plan, real for the run), write it 0600 only for the time kubeadm runs, run kubeadm with a
// timeout and retries for transient join failures, and turn a failure into report data. What it
// gives kubeadm is ./kubeadm-inputs.ts's, what it finds on the machine ./kubeadm-machine.ts's, its
// undo for reset ./kubeadm-undo.ts's.
import type { Step, CheckResult, ApplyResult } from '../../engine/step.ts';
import { CommandError, ConfigError, StepDetailsError, type ConfigIssue, type FailureDetails } from '../../errors.ts';
import { tail } from '../../host/index.ts';
import { MACHINEADM_PATCH } from '../render.ts';
import { kubeadmPaths } from '../paths.ts';
import { isTransient, parseKubeadmFailure, scrubKubeadmOutput } from '../output.ts';
import { KUBEADM_ROOTFS_ENV, OUTPUT_TAIL_LINES, type Command, kubernetesOf, joinPath, kubeadmUnderRoot, rootfsArgs, kubeadmArgv, kubeadmFound, render, renderShown, chooseOrFail, readSecrets, secretValues } from './kubeadm-inputs.ts';
import { currentKubeadmVersion, kubeletLogTail, hintFor, kubeadmLeftover, missingCertificates, missingDiscoveryFile, userPatches, leftoverRefusal, LEFTOVER_HINT, planChanges, filesResetDeletes, putBack } from './kubeadm-machine.ts';
import { kubeadmUndo, kubeadmUndoRecord } from './kubeadm-undo.ts';
import { offlineImageIssues } from './offline-images.ts';
import { changedSinceJoin, registrationDigests } from './registration.ts';

export { KUBEADM_ROOTFS_ENV, OUTPUT_TAIL_LINES, kubeadmVerbosity } from './kubeadm-inputs.ts';

const MAX_BACKOFF_SECONDS = 300;

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
      const discoveryFile = await missingDiscoveryFile(ctx, k);
      if (discoveryFile !== undefined) {
        issues.push({ path: 'spec.kubernetes.discoveryFile', message: `${discoveryFile} is not on this machine: kubeadm join refuses a discovery file it cannot read`, hint: 'put the kubeconfig there before machineadm runs, or write it with spec.files' });
      }
      if (k.patchesDirectory !== undefined && (await userPatches(ctx, k.patchesDirectory)).includes(MACHINEADM_PATCH)) {
        issues.push({ path: 'spec.kubernetes.patchesDirectory', message: `${k.patchesDirectory}/${MACHINEADM_PATCH} has the name of machineadm's own kubelet patch`, hint: 'rename it, e.g. kubeletconfiguration0+merge.yaml (kubeadm applies patches of one target in name order)' });
      }
      const joined = ctx.previous?.data?.joined === true && ctx.host.fs.platform === ctx.facts.os && (await ctx.host.fs.exists(paths.kubeletConf));
      // kubeadm that does not run here (a scratch --root) refuses nothing.
      const runs = ctx.facts.liveRoot || kubeadmUnderRoot(ctx);
      const refusal = !runs || (joined && !ctx.options.force) ? undefined : leftoverRefusal(ctx, await kubeadmLeftover(ctx, command, paths));
      if (refusal) issues.push({ path: `spec.kubernetes.bootstrap`, message: `kubeadm ${command}: ${refusal}`, hint: LEFTOVER_HINT, refused: true });
      if (runs) issues.push(...(await offlineImageIssues(ctx, command)));
      // A kubeadm that is missing now and that nothing of this run may install (install, a file,
      // the operator's commands) would fail the run halfway.
      const mayInstall = k.install?.binaries.includes('kubeadm') || (ctx.config.spec.files ?? []).some((f) => /(^|[\\/])kubeadm(\.exe)?$/.test(f.path)) || (ctx.config.spec.commands?.boot?.length ?? 0) + (ctx.config.spec.commands?.beforeKubeadm?.length ?? 0) > 0;
      if (runs && !mayInstall && !(await kubeadmFound(ctx))) {
        issues.push({ path: 'spec.kubernetes', message: 'kubeadm is not installed (not found on PATH)', hint: 'install kubeadm and the kubelet before machineadm runs (pkgs.k8s.io), or have machineadm install them: spec.kubernetes.install', refused: true });
      }
      // Nor does kubeadm get far without a container runtime: machineadm configures containerd but
      // does not install it (on Windows it registers the containerd.exe of spec.windows.containerdPath).
      const mayInstallRuntime = (ctx.config.spec.files ?? []).some((f) => /(^|\/)containerd$/.test(f.path)) || (ctx.config.spec.commands?.boot?.length ?? 0) + (ctx.config.spec.commands?.beforeKubeadm?.length ?? 0) > 0;
      if (runs && ctx.facts.os === 'linux' && ctx.facts.containerdVersion === undefined && !mayInstallRuntime) {
        issues.push({ path: 'spec.kubernetes', message: 'containerd is not installed (not found on PATH): kubeadm needs a container runtime', hint: 'install containerd before machineadm runs (in the image, or packages: [containerd] in cloud-config: docs/recipes/standard-image), or from spec.commands.boot', refused: true });
      }
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
      if (ctx.previous?.data?.joined === true && hasKubeletConf && !ctx.options.force) {
        // Settled, but not as configured now: the operator hears it instead of "already done".
        const changed = changedSinceJoin(ctx, ctx.previous.data.registered);
        if (changed.length === 0) return { done: true, changes: [] };
        return { done: true, changes: [], note: `joined already; ${changed.join(', ')} changed since this machine joined, and kubeadm applies ${changed.length > 1 ? 'them' : 'it'} only when it joins: the node keeps the earlier value${changed.length > 1 ? 's' : ''} (change the node through the API, e.g. kubectl label or kubectl taint, or run again with --force to reset the node and join again)` };
      }
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
      const program = await kubeadmFound(ctx);
      if (!program) {
        throw new StepDetailsError('kubeadm is not installed (not found on PATH)', {}, { hint: 'install kubeadm and the kubelet (for example from pkgs.k8s.io, or with spec.kubernetes.install) before the provision phase' });
      }
      // A join that an earlier run of machineadm started and never finished is its own to redo;
      // the preflight refused any other (this finds what appeared since).
      const leftover = await kubeadmLeftover(ctx, command, paths);
      const refusal = leftoverRefusal(ctx, leftover);
      if (refusal) throw new StepDetailsError(refusal, {}, { hint: LEFTOVER_HINT });
      const kubeadmVersion = await currentKubeadmVersion(ctx, program);
      const choice = chooseOrFail(kubeadmVersion, k);
      const secrets = await readSecrets(ctx, k);
      const known = secretValues(secrets);
      const rendered = render(ctx, k, choice, secrets, kubeadmVersion);
      const configFile = paths.configFile(command);
      const argv = kubeadmArgv(command, k, paths, ctx, program);
      // As the files step left them, before any kubeadm of this run changed them.
      const kept = await filesResetDeletes(ctx, paths);
      const reset = async (): Promise<void> => {
        // The socket is named because a half-joined node has no Node object to read it from, and
        // kubeadm's own detection fails when a second runtime's socket exists.
        const result = await proc
          .run([program, 'reset', '-f', '--cri-socket', paths.criSocket, ...rootfsArgs(ctx)], { timeoutMs: 5 * 60_000, allowFailure: true, onLine: (line) => ctx.output(scrubKubeadmOutput(line, known)) })
          .catch((error: unknown) => ({ exitCode: -1, error }));
        // A reset that fails is reported; the next kubeadm run says what it left behind.
        if (result.exitCode !== 0) ctx.log(`kubeadm reset -f did not succeed (exit code ${result.exitCode})`, 'warning');
        await putBack(ctx, kept);
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
            return { record: { joined: true, joinedAt: ctx.host.now().toISOString(), command, role: k.role, apiVersion: rendered.apiVersion, kubeadmVersion, attempts: attempt, registered: registrationDigests(ctx) } };
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

export const kubeadmInitStep = kubeadmStep('init');

export const kubeadmJoinStep = kubeadmStep('join');
