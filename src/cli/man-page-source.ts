// The man page of this build: the whole commander tree (every command registered) rendered.
import { buildProgram } from './main.ts';
import { commandTree } from './command-tree.ts';
import { renderManPage } from './man-page.ts';
import { buildInfo } from '../version.ts';
import type { Io } from './io.ts';

const silent: Io = { stdout: () => {}, stderr: () => {}, readStdin: async () => Buffer.alloc(0), env: {}, cwd: '/', interactive: false };

export function manPageText(): string {
  return renderManPage(commandTree(buildProgram(silent, () => {})), buildInfo.version);
}
