// Turning the common options into a Host and the state directory, when a command runs.
import { resolve } from 'node:path';
import { createHost, defaultStateDir, RootedFileSystem, type Host, type HostOptions } from '../host/index.ts';
import type { CommonOptions } from './options.ts';
import type { Io } from './io.ts';

/** `given`: the machine's facts when known already, the run's interrupt signal, version probes started already. */
export function hostFrom(options: CommonOptions & { devices?: boolean; otherMachine?: boolean }, io: Io, given: Pick<HostOptions, 'facts' | 'signal' | 'versions'> = {}): Host {
  const stateDir = options.stateDir ? { stateDir: resolve(io.cwd, options.stateDir) } : {};
  const { facts, signal, versions } = given;
  return createHost({ root: resolve(io.cwd, options.root), offline: options.offline ?? false, ...(options.devices ? { devices: true } : {}), ...(options.otherMachine ? { otherMachine: true } : {}), env: io.env, ...stateDir, ...(facts ? { facts } : {}), ...(signal ? { signal } : {}), ...(versions ? { versions } : {}) });
}

export function stateFsFrom(options: CommonOptions, io: Io, host: Host): RootedFileSystem {
  const dir = options.stateDir ? resolve(io.cwd, options.stateDir) : host.fs.mapPath(defaultStateDir(host.fs.platform, host.env));
  return new RootedFileSystem(dir);
}
