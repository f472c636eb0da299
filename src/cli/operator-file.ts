// Files the operator names on the command line (keys, signatures, password and CA files), read
// through the Host: a directory given by mistake is said to be one (exit 2), and a path through a
// file is a file that is not there, instead of the system call's EISDIR or ENOTDIR.
import type { Host } from '../host/index.ts';
import { UsageError } from '../errors.ts';

/** The file's bytes, or undefined when there is none; `what` names the option in the message. */
export async function readOperatorFile(host: Pick<Host, 'local'>, path: string, what: string): Promise<Buffer | undefined> {
  try {
    return await host.local.readFile(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR') return undefined;
    if (code === 'EISDIR') throw new UsageError(`${what} ${path} is a directory, not a file`, { hint: 'give the path of the file itself' });
    throw error;
  }
}
