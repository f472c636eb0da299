// Turning the common options into a Host and the state directory, when a command runs.
import { resolve } from 'node:path';
import { createHost, defaultStateDir, RootedFileSystem, type Facts, type Host } from '../host/index.ts';
import type { CommonOptions } from './options.ts';
import type { Io } from './io.ts';

export function hostFrom(options: CommonOptions & { devices?: boolean; otherMachine?: boolean }, io: Io, facts?: Facts | Promise<Facts>, signal?: AbortSignal): Host {
  const stateDir = options.stateDir ? { stateDir: resolve(io.cwd, options.stateDir) } : {};
  return createHost({ root: resolve(io.cwd, options.root), offline: options.offline ?? false, ...(options.devices ? { devices: true } : {}), ...(options.otherMachine ? { otherMachine: true } : {}), env: io.env, ...stateDir, ...(facts ? { facts } : {}), ...(signal ? { signal } : {}) });
}

export function stateFsFrom(options: CommonOptions, io: Io, host: Host): RootedFileSystem {
  const dir = options.stateDir ? resolve(io.cwd, options.stateDir) : host.fs.mapPath(defaultStateDir(host.fs.platform, host.env));
  return new RootedFileSystem(dir);
}
