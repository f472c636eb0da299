// The rendered containerd files for a step, with extraConfig problems turned into configuration
// errors that name the field.
import type { StepContext } from '../../engine/step.ts';
import { ConfigError } from '../../errors.ts';
import { ExtraConfigError } from '../../config/containerd-toml/extra.ts';
import { renderContainerdFiles, type ContainerdFiles, type RenderedFile } from '../files.ts';
import type { DesiredFile } from '../../engine/managed-file.ts';

/**
 * The containerd steps render the same files from the same configuration and facts, in the run's
 * preflight and in each step's check and apply (six renders of an init; each makes and checks
 * containerd's TOML): made once per configuration and facts, and shared, read-only.
 */
const rendered = new WeakMap<object, WeakMap<object, ContainerdFiles>>();

export function renderFor(ctx: StepContext): ContainerdFiles {
  let byFacts = rendered.get(ctx.config);
  if (!byFacts) rendered.set(ctx.config, (byFacts = new WeakMap()));
  let files = byFacts.get(ctx.facts);
  if (!files) byFacts.set(ctx.facts, (files = freeze(render(ctx))));
  return files;
}

function freeze(files: ContainerdFiles): ContainerdFiles {
  for (const file of [files.config, files.caBundle, files.proxy, ...files.hosts]) if (file) Object.freeze(file);
  Object.freeze(files.hosts);
  Object.freeze(files.target);
  return Object.freeze(files);
}

function render(ctx: StepContext): ContainerdFiles {
  try {
    return renderContainerdFiles(ctx.config.spec.containerd, ctx.facts);
  } catch (error) {
    if (error instanceof ExtraConfigError) {
      throw new ConfigError(
        error.problems.map((p) => ({ path: 'spec.containerd.extraConfig', message: `${p.line ? `TOML line ${p.line}: ` : ''}${p.message}`, ...(p.hint ? { hint: p.hint } : {}) })),
      );
    }
    throw error;
  }
}

export function desiredFile(file: RenderedFile): DesiredFile {
  return { path: file.path, content: Buffer.from(file.content), mode: file.mode, field: file.field, ...(file.sensitive ? { sensitive: true } : {}) };
}

/** Marks files machineadm wrote, so only those are ever removed again. */
export const WRITTEN_BY_MACHINEADM = '# Written by machineadm';

