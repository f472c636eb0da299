// Runs machineadm's command line in-process with a recording Io: the same main() the executable
// runs, without a process per call.
import { main } from '../../src/cli/main.ts';
import type { Io } from '../../src/cli/io.ts';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runCli(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; interactive?: boolean } = {}): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const io: Io = {
    stdout: (t) => void (stdout += t),
    stderr: (t) => void (stderr += t),
    readStdin: async () => Buffer.alloc(0),
    env: options.env ?? process.env,
    cwd: options.cwd ?? process.cwd(),
    interactive: options.interactive ?? false,
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}
