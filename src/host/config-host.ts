// What reading a configuration uses of the machine: its files, the operator's files, the
// environment, --offline, waiting between retries, and the machine's facts, which only a
// configuration that takes values from the machine asks for. config validate and config view start
// from this, without the processes, Windows and reboot parts of a whole Host (and their loading).
import { operatorFileSystem, RootedFileSystem } from './fs.ts';
import type { Host, HostOptions } from './index.ts';

export type ConfigHost = Pick<Host, 'fs' | 'local' | 'env' | 'offline' | 'sleep' | 'facts'>;

export function createConfigHost(options: Required<Pick<HostOptions, 'root' | 'offline' | 'env'>>): ConfigHost {
  let whole: Promise<Host> | undefined;
  return {
    fs: new RootedFileSystem(options.root),
    local: operatorFileSystem(),
    env: options.env,
    offline: options.offline,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    facts: async () => (await (whole ??= import('./index.ts').then((m) => m.createHost(options)))).facts(),
  };
}
