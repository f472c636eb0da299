// The real programs that read a recipe, driven the same way by every recipe test: machineadm
// itself, and cloud-init 22.4's Python (its user-data parser, and its init stage consuming user
// data with part handlers) against scratch directories only.
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

export const REPO = resolve(import.meta.dirname, '../..');
export const RECIPES = join(REPO, 'docs/recipes');
const NODE = process.execPath;
// cloud-init's own interpreter: a python3 earlier on PATH (pyenv, venv) does not have its modules.
const CLOUD_INIT_PYTHON = '/usr/bin/python3';

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function run(command: string, args: string[], env: Record<string, string> = {}): Run {
  const r = spawnSync(command, args, { cwd: REPO, encoding: 'utf8', env: { ...process.env, PATH: `${dirname(NODE)}:${process.env.PATH ?? ''}`, ...env } });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

export function machineadm(...args: string[]): Run {
  return run(NODE, ['bin/machineadm.js', ...args]);
}

export function writeScratch(dir: string, name: string, content: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

export interface MimePart {
  type: string;
  filename: string | null;
  body: string;
}

// Reads user data the way cloud-init does at boot (its UserDataProcessor, with includes and
// nesting resolved) and lists the leaf parts it would hand to its handlers.
const READ_USER_DATA = `
import base64, json, sys
from cloudinit import helpers
from cloudinit.user_data import UserDataProcessor
paths = helpers.Paths({"cloud_dir": sys.argv[2]})
message = UserDataProcessor(paths).process(open(sys.argv[1], "rb").read())
parts = [{"type": p.get_content_type(), "filename": p.get_filename(),
          "body": base64.b64encode(p.get_payload(decode=True)).decode()}
         for p in message.walk() if not p.is_multipart()]
print(json.dumps(parts))
`;

export function cloudInitParts(file: string, cloudDir: string): MimePart[] {
  const out = execFileSync(CLOUD_INIT_PYTHON, ['-c', READ_USER_DATA, file, cloudDir], { encoding: 'utf8' });
  return (JSON.parse(out) as MimePart[]).map((p) => ({ ...p, body: Buffer.from(p.body, 'base64').toString('utf8') }));
}

export interface LogRecord {
  level: string;
  logger: string;
  message: string;
}

/**
 * cloud-init's init stage consuming the user data (default handlers plus any #part-handler parts),
 * its state under cloudDir; MACHINEADM_ROOT points machineadm's part handler at a scratch root.
 * Returns what cloud-init logged.
 */
export function consumeUserData(file: string, cloudDir: string, machineRoot: string): LogRecord[] {
  const out = execFileSync(CLOUD_INIT_PYTHON, [join(REPO, 'test/recipes/consume-user-data.py'), file, cloudDir], {
    encoding: 'utf8',
    env: { ...process.env, MACHINEADM_ROOT: machineRoot },
  });
  return JSON.parse(out) as LogRecord[];
}

/** What an operator would see: cloud-init's WARNING and ERROR lines. */
export function warnings(records: LogRecord[]): string[] {
  return records.filter((r) => r.level === 'WARNING' || r.level === 'ERROR' || r.level === 'CRITICAL').map((r) => r.message);
}
