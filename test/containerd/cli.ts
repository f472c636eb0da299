// Runs machineadm's CLI in-process with a recording Io.
import { main } from '../../src/cli/main.ts';
import type { Io } from '../../src/cli/io.ts';

export async function runCli(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: Io = {
    stdout: (t) => void (stdout += t),
    stderr: (t) => void (stderr += t),
    readStdin: async () => Buffer.alloc(0),
    env,
    cwd: process.cwd(),
    interactive: false,
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}
