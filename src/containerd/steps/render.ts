// The rendered containerd files for a step, with extraConfig problems turned into configuration
// errors that name the field.
import type { StepContext } from '../../phases/step.ts';
import { ConfigError } from '../../errors.ts';
import { ExtraConfigError } from '../extra.ts';
import { renderContainerdFiles, type ContainerdFiles, type RenderedFile } from '../files.ts';
import type { DesiredFile } from '../../linux/managed-file.ts';

export function renderFor(ctx: StepContext): ContainerdFiles {
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

