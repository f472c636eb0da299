// seal's work: read the recipients and the secret, encrypt with age (X25519), print the armor.
import { isUtf8 } from 'node:buffer';
import { resolve } from 'node:path';
import { armor, Encrypter } from 'age-encryption';
import type { Io } from '../io.ts';
import { operatorFileSystem } from '../../host/fs.ts';
import { ExitCode, UsageError } from '../../errors.ts';
import { MAX_SECRET_FILE_BYTES } from '../../config/secret-sources/limits.ts';

export interface SealOptions {
  recipient?: string[];
  recipientsFile?: string[];
  in?: string;
  yaml?: boolean;
}

const RECIPIENT = /^age1(pq1)?[02-9ac-hj-np-z]+$/;

export async function runSeal(options: SealOptions, io: Io): Promise<number> {
  // `shown`: what a refusal may quote. A line of a file is never quoted (as age does not): a file
  // given with -R in place of --in would otherwise put the secret on the console.
  const recipients = [...(options.recipient ?? []).map((r) => ({ r: r.trim(), from: '-r', shown: `${JSON.stringify(r.trim().slice(0, 80))} ` }))];
  for (const file of options.recipientsFile ?? []) {
    const path = resolve(io.cwd, file);
    const text = await readOperatorFile(path, 'recipients file');
    text
      .toString('utf8')
      .split(/\r?\n/)
      .forEach((line, i) => {
        const r = line.trim();
        if (r !== '' && !r.startsWith('#')) recipients.push({ r, from: `${path}:${i + 1}`, shown: '' });
      });
  }
  if (recipients.length === 0) throw new UsageError('seal needs at least one recipient', { hint: 'give -r age1... (age-keygen -y IDENTITY prints a machine\'s) or -R FILE' });
  const encrypter = new Encrypter();
  for (const { r, from, shown } of recipients) {
    if (r.startsWith('AGE-SECRET-KEY-')) throw new UsageError(`${from}: that is an identity (a secret key), not a recipient`, { hint: 'give its public recipient: age-keygen -y IDENTITY-FILE; and keep the identity off this command line' });
    const notOne = `${from}: ${shown}${shown ? 'is ' : ''}not an age recipient`;
    const hint = 'a recipient starts with age1 (age-keygen -y IDENTITY prints it); SSH and plugin recipients are not supported; the secret itself goes in with --in FILE or standard input';
    if (!RECIPIENT.test(r)) throw new UsageError(notOne, { hint });
    try {
      encrypter.addRecipient(r);
    } catch (error) {
      throw new UsageError(`${notOne}${shown ? `: ${(error as Error).message}` : ''}`, { hint });
    }
  }
  const secret = options.in === undefined || options.in === '-' ? await io.readStdin(MAX_SECRET_FILE_BYTES + 1) : await readOperatorFile(resolve(io.cwd, options.in), 'secret');
  const where = options.in === undefined || options.in === '-' ? 'stdin' : resolve(io.cwd, options.in);
  if (secret.length === 0) throw new UsageError(`${where}: the secret is empty`, { hint: 'pipe the secret in, or give --in FILE' });
  if (secret.length > MAX_SECRET_FILE_BYTES) throw new UsageError(`${where}: the secret is larger than ${MAX_SECRET_FILE_BYTES / 1024} KiB, more than machineadm reads as a secret`);
  // The machine refuses such an envelope's plaintext (a configuration value is text), so sealing it
  // would only fail later, at boot.
  if (!isUtf8(secret)) throw new UsageError(`${where}: the secret is not UTF-8 text, which no machine would accept from the envelope`, { hint: 'seal it base64-encoded (base64 -w0 FILE | machineadm seal ...) and give the file encoding: base64' });
  const sealed = armor.encode(await encrypter.encrypt(new Uint8Array(secret)));
  if (!options.yaml) io.stdout(sealed);
  else io.stdout(`valueFrom:\n  age:\n    armor: |\n${sealed.replace(/\n$/, '').split('\n').map((line) => `      ${line}`).join('\n')}\n`);
  return ExitCode.ok;
}

async function readOperatorFile(path: string, what: string): Promise<Buffer> {
  const found = await operatorFileSystem().readSmallFile(path, MAX_SECRET_FILE_BYTES + 1);
  if ('problem' in found) throw new UsageError(`${path}: the ${what} ${found.problem === 'missing' ? 'does not exist' : found.problem === 'too-large' ? `is larger than ${MAX_SECRET_FILE_BYTES / 1024} KiB` : 'is not a regular file'}`);
  return found.bytes;
}
