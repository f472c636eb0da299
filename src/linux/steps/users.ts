// prepare/users: local users from spec.users, made with the shadow tools (groupadd, useradd,
// usermod, chpasswd; --prefix / --root under a scratch root). An existing user is updated, never
// recreated; groups are added, never taken away. The sudo rule (checked by visudo when it is
// installed) and ~/.ssh/authorized_keys are files machineadm owns.
import type { Change, CheckResult, Step, StepContext } from '../../engine/step.ts';
import type { UserSpec } from '../../config/schema/index.ts';
import { CRYPT_HASH } from '../../config/schema/users.ts';
import { ConfigError, MachineadmError, StepDetailsError, type ConfigIssue } from '../../errors.ts';
import { chrootArgs, isLocked, prefixArgs, supplementaryGroups, type Accounts } from '../accounts.ts';
import { errorForField, inspectFile, inspectTarget, writeFiles, type DesiredFile } from '../../engine/managed-file.ts';
import { readAccounts, runShadowTool, usersUndo, usersUndoRecord } from '../users-undo.ts';

export const SUDOERS_DIR = '/etc/sudoers.d';

function usersOf(ctx: StepContext): readonly UserSpec[] {
  return ctx.config.spec.users ?? [];
}

// sudo skips files in sudoers.d whose names hold a "." or end in "~"; user names hold neither.
export function sudoersPath(name: string): string {
  return `${SUDOERS_DIR}/machineadm-${name}`;
}

// Owned by root, checked at every run: sudo skips a rule file another user owns, without failing.
function sudoersFile(user: UserSpec, index: number): DesiredFile | undefined {
  if (user.sudo === undefined) return undefined;
  return { path: sudoersPath(user.name), content: Buffer.from(`${user.name} ${user.sudo}\n`), mode: 0o440, owner: '0:0', field: `spec.users[${index}].sudo` };
}

function homeOf(user: UserSpec, accounts: Accounts): string {
  return user.homeDir ?? accounts.users.get(user.name)?.home ?? `/home/${user.name}`;
}

function keysFile(user: UserSpec, index: number, accounts: Accounts): DesiredFile | undefined {
  if (user.sshAuthorizedKeys === undefined) return undefined;
  const entry = accounts.users.get(user.name);
  return {
    path: `${homeOf(user, accounts)}/.ssh/authorized_keys`,
    content: Buffer.from(user.sshAuthorizedKeys.map((k) => `${k}\n`).join('')),
    mode: 0o600,
    ...(entry ? { owner: `${entry.uid}:${entry.gid}` } : {}),
    field: `spec.users[${index}].sshAuthorizedKeys`,
  };
}

function passwordField(index: number): string {
  return `spec.users[${index}].passwordHash`;
}

async function readHash(ctx: StepContext, user: UserSpec, index: number): Promise<string | undefined> {
  if (user.passwordHash === undefined) return undefined;
  const value = await ctx.secret(user.passwordHash, passwordField(index));
  if (!CRYPT_HASH.test(value)) throw new ConfigError([{ path: passwordField(index), message: 'the value read is not a crypt(3) hash', hint: 'give the hash as /etc/shadow holds it (mkpasswd -m sha-512), never the password itself' }]);
  return value;
}

/** The groups spec.users needs that the machine does not have yet, in order. */
function missingGroups(users: readonly UserSpec[], accounts: Accounts): string[] {
  const missing: string[] = [];
  for (const user of users) {
    for (const g of [user.primaryGroup, ...(user.groups ?? [])]) if (g !== undefined && !accounts.groups.has(g) && !missing.includes(g)) missing.push(g);
  }
  return missing;
}

/** What usermod would change for an existing user, as flags and words for the plan. */
function userUpdates(user: UserSpec, accounts: Accounts): { args: string[]; said: string[] } {
  const entry = accounts.users.get(user.name)!;
  const args: string[] = [];
  const said: string[] = [];
  if (user.gecos !== undefined && user.gecos !== entry.gecos) (args.push('--comment', user.gecos), said.push(`gecos ${JSON.stringify(entry.gecos)} -> ${JSON.stringify(user.gecos)}`));
  if (user.homeDir !== undefined && user.homeDir !== entry.home) (args.push('--home', user.homeDir), said.push(`home ${entry.home} -> ${user.homeDir}`));
  if (user.shell !== undefined && user.shell !== entry.shell) (args.push('--shell', user.shell), said.push(`shell ${entry.shell} -> ${user.shell}`));
  if (user.primaryGroup !== undefined && accounts.groups.get(user.primaryGroup)?.gid !== entry.gid) (args.push('--gid', user.primaryGroup), said.push(`primary group -> ${user.primaryGroup}`));
  const have = supplementaryGroups(accounts, user.name);
  const add = (user.groups ?? []).filter((g) => !have.has(g));
  if (add.length) (args.push('--append', '--groups', add.join(',')), said.push(`groups + ${add.join(', ')}`));
  return { args, said };
}

function useraddArgs(user: UserSpec, accounts: Accounts): string[] {
  const args = ['--create-home'];
  if (user.gecos !== undefined) args.push('--comment', user.gecos);
  if (user.homeDir !== undefined) args.push('--home-dir', user.homeDir);
  if (user.shell !== undefined) args.push('--shell', user.shell);
  // Without a primary group, a group named after the user: made, or used when it exists already
  // (useradd --user-group refuses an existing one).
  if (user.primaryGroup !== undefined) args.push('--gid', user.primaryGroup);
  else if (accounts.groups.has(user.name)) args.push('--gid', user.name);
  else args.push('--user-group');
  if (user.groups?.length) args.push('--groups', user.groups.join(','));
  return args;
}

interface PlannedUser {
  index: number;
  user: UserSpec;
  create: boolean;
  updates: { args: string[]; said: string[] };
  password: 'set' | 'lock' | undefined;
  hash: string | undefined;
}

async function planUsers(ctx: StepContext, accounts: Accounts): Promise<PlannedUser[]> {
  const planned: PlannedUser[] = [];
  for (const [index, user] of usersOf(ctx).entries()) {
    const create = !accounts.users.has(user.name);
    const hash = await readHash(ctx, user, index);
    const current = accounts.passwords.get(user.name);
    // useradd leaves a new user's password locked ("!"): only a hash needs setting then.
    const password = hash !== undefined ? (current === hash ? undefined : 'set') : user.lockPassword && !create && !isLocked(current) ? 'lock' : undefined;
    planned.push({ index, user, create, updates: create ? { args: [], said: [] } : userUpdates(user, accounts), password, hash });
  }
  return planned;
}

// A ~/.ssh that is a link would carry the keys (and the chown) wherever it points.
async function sshDirChange(ctx: StepContext, p: PlannedUser, accounts: Accounts): Promise<Change | undefined> {
  if (p.user.sshAuthorizedKeys === undefined) return undefined;
  const dir = `${homeOf(p.user, accounts)}/.ssh`;
  const info = await ctx.host.fs.stat(dir);
  if (info?.kind === 'symlink' || (info && info.kind !== 'directory')) {
    throw new ConfigError([{ path: `spec.users[${p.index}].sshAuthorizedKeys`, message: `${dir} is ${info.kind === 'symlink' ? 'a symbolic link' : 'not a directory'}; machineadm does not write keys through it`, hint: 'remove it (machineadm creates the directory 0700) and run again' }]);
  }
  const entry = accounts.users.get(p.user.name);
  if (!info) return { action: 'create', target: dir, detail: 'directory, mode 0700, owned by the user' };
  if ((info.mode & 0o7777) !== 0o700 || (entry && ctx.facts.privileged && (info.uid !== entry.uid || info.gid !== entry.gid))) return { action: 'chmod', target: dir, detail: 'mode 0700, owned by the user' };
  return undefined;
}

// A home useradd never made (a user made without one, or given a new homeDir, which usermod
// does not make) is made when keys go into it: the user's own, as useradd --create-home makes it.
async function homeChange(ctx: StepContext, p: PlannedUser, accounts: Accounts): Promise<Change | undefined> {
  if (p.user.sshAuthorizedKeys === undefined || p.create) return undefined;
  const home = homeOf(p.user, accounts);
  if (await ctx.host.fs.stat(home)) return undefined;
  return { action: 'create', target: home, detail: 'home directory, mode 0700, owned by the user' };
}

async function changesOf(ctx: StepContext, accounts: Accounts, planned: readonly PlannedUser[]): Promise<Change[]> {
  const changes: Change[] = missingGroups(usersOf(ctx), accounts).map((g) => ({ action: 'create', target: `group ${g}` }));
  for (const p of planned) {
    const { user } = p;
    if (p.create) {
      const parts = [`home ${homeOf(user, accounts)}`, ...(user.shell ? [`shell ${user.shell}`] : []), `primary group ${user.primaryGroup ?? user.name}`, ...(user.groups?.length ? [`groups ${user.groups.join(', ')}`] : [])];
      changes.push({ action: 'create', target: `user ${user.name}`, detail: parts.join(', ') });
    } else if (p.updates.said.length) {
      changes.push({ action: 'update', target: `user ${user.name}`, detail: p.updates.said.join('; ') });
    }
    if (p.password === 'set') changes.push({ action: 'set', target: `password of ${user.name}`, detail: `the hash of spec.users[${p.index}].passwordHash` });
    if (p.password === 'lock') changes.push({ action: 'lock', target: `password of ${user.name}`, detail: 'lockPassword (SSH keys still work)' });
    const sudo = sudoersFile(user, p.index);
    if (sudo) {
      const state = await inspectFile(ctx.host.fs, sudo, ctx.facts.privileged);
      if (state.change) changes.push(state.change);
    }
    const home = await homeChange(ctx, p, accounts);
    if (home) changes.push(home);
    const dir = await sshDirChange(ctx, p, accounts);
    if (dir) changes.push(dir);
    const keys = keysFile(user, p.index, accounts);
    if (keys) {
      const state = await inspectFile(ctx.host.fs, keys, ctx.facts.privileged && !p.create);
      if (state.change) changes.push(state.change);
    }
  }
  return changes;
}

async function visudoProblem(ctx: StepContext, file: DesiredFile): Promise<string | undefined> {
  if (!(await ctx.host.proc.which('visudo'))) return undefined;
  const result = await ctx.host.proc.run(['visudo', '--check', '--file', '-'], { input: file.content, timeoutMs: 30_000, allowFailure: true });
  if (result.exitCode === 0) return undefined;
  return (result.stderr.trim().split('\n')[0] ?? `visudo exited ${result.exitCode}`).replace(/^stdin:/, 'line ');
}

const TOOLS = { groupadd: 'passwd (Debian) or shadow-utils', useradd: 'passwd (Debian) or shadow-utils', usermod: 'passwd (Debian) or shadow-utils', chpasswd: 'passwd (Debian) or shadow-utils' } as const;

async function run(ctx: StepContext, argv: [string, ...string[]], field: string, input?: string): Promise<void> {
  await runShadowTool(ctx, argv, field, input !== undefined ? { input } : {});
}

export const usersStep: Step = {
  id: 'users',
  summary: 'create or update the users of spec.users (groups, sudo, SSH keys, password)',
  applies: (config) => (config.spec.users?.length ?? 0) > 0,
  // Everything the step would refuse (tools, a hash, a sudo rule, a linked ~/.ssh) is found before the run changes anything.
  async preflight(ctx) {
    const issues: ConfigIssue[] = [];
    if (ctx.facts.os === 'windows') throw new ConfigError([{ path: 'spec.users', message: 'local users are managed on Linux only', hint: 'create Windows users in the image or through a boot command (spec.commands.boot)' }]);
    const users = usersOf(ctx);
    const needed: (keyof typeof TOOLS)[] = ['groupadd', 'useradd', 'usermod', ...(users.some((u) => u.passwordHash !== undefined) ? (['chpasswd'] as const) : [])];
    for (const tool of needed) if (!(await ctx.host.proc.which(tool))) issues.push({ path: 'spec.users', message: `${tool} is not installed (not found on PATH)`, hint: `install ${TOOLS[tool]}` });
    // Without /etc/shadow, chpasswd writes the hash into /etc/passwd, which every user reads.
    const hashed = users.findIndex((u) => u.passwordHash !== undefined);
    if (hashed >= 0 && (await ctx.host.fs.stat('/etc/shadow'))?.kind !== 'file') {
      issues.push({ path: passwordField(hashed), message: 'this machine has no /etc/shadow: the hash would be written into /etc/passwd, which every user can read', hint: 'create /etc/shadow (pwconv), or leave the password out and use SSH keys' });
    }
    for (const [index, user] of users.entries()) {
      await readHash(ctx, user, index).catch((error: unknown) => {
        if (!(error instanceof ConfigError)) throw error;
        issues.push(...error.issues);
      });
      const sudo = sudoersFile(user, index);
      if (sudo) {
        const problem = await visudoProblem(ctx, sudo);
        if (problem) issues.push({ path: sudo.field, message: `visudo rejects the rule "${user.name} ${user.sudo}": ${problem}`, hint: 'write the part of a sudoers line after the user name, e.g. ALL=(ALL) NOPASSWD:ALL' });
      }
    }
    if (issues.length) throw new ConfigError(issues);
    const accounts = await readAccounts(ctx);
    for (const [index, user] of users.entries()) {
      for (const file of [sudoersFile(user, index), keysFile(user, index, accounts)]) {
        if (!file) continue;
        try {
          await inspectTarget(ctx.host.fs, file.path);
        } catch (error) {
          const e = errorForField(file.field, error);
          issues.push({ path: file.field, message: e.message.slice(file.field.length + 2), ...(e.hint ? { hint: e.hint } : {}) });
        }
      }
      await sshDirChange(ctx, { index, user, create: false, updates: { args: [], said: [] }, password: undefined, hash: undefined }, accounts).catch((error: unknown) => {
        if (!(error instanceof ConfigError)) throw error;
        issues.push(...error.issues);
      });
    }
    if (issues.length) throw new ConfigError(issues);
  },
  async check(ctx): Promise<CheckResult> {
    if (ctx.facts.os === 'windows') return { done: false, changes: [{ action: 'refuse', target: 'spec.users', detail: 'local users are managed on Linux only' }] };
    const accounts = await readAccounts(ctx);
    try {
      const changes = await changesOf(ctx, accounts, await planUsers(ctx, accounts));
      return { done: changes.length === 0, changes };
    } catch (error) {
      // What the preflight refuses shows in the plan as a refusal, with the plan of the other steps.
      if (!(error instanceof MachineadmError)) throw error;
      const issues = error instanceof ConfigError ? error.issues : [{ path: 'spec.users', message: error.message }];
      return { done: false, changes: issues.map((i) => ({ action: 'refuse', target: i.path, detail: i.message })) };
    }
  },
  async apply(ctx) {
    const root = ctx.host.fs.root;
    const live = ctx.host.fs.isLiveRoot;
    let accounts = await readAccounts(ctx);
    for (const group of missingGroups(usersOf(ctx), accounts)) await run(ctx, ['groupadd', ...prefixArgs(root, live), group], `group ${group}`);
    accounts = await readAccounts(ctx);
    const planned = await planUsers(ctx, accounts);
    for (const p of planned) {
      const field = `spec.users[${p.index}]`;
      // useradd --prefix still copies the host's /etc/skel: under a scratch root, the root's own.
      const skel = live ? [] : ['--skel', ctx.host.fs.mapPath('/etc/skel')];
      if (p.create) await run(ctx, ['useradd', ...prefixArgs(root, live), ...skel, ...useraddArgs(p.user, accounts), p.user.name], field);
      else if (p.updates.args.length) await run(ctx, ['usermod', ...prefixArgs(root, live), ...p.updates.args, p.user.name], field);
    }
    accounts = await readAccounts(ctx);
    for (const p of planned) {
      const field = `spec.users[${p.index}]`;
      const current = accounts.passwords.get(p.user.name);
      // The hash goes through stdin: an argument would show in the process list.
      if (p.hash !== undefined && current !== p.hash) await run(ctx, ['chpasswd', '--encrypted', ...chrootArgs(root, live)], passwordField(p.index), `${p.user.name}:${p.hash}\n`);
      else if (p.hash === undefined && p.user.lockPassword && !isLocked(current)) await run(ctx, ['usermod', ...prefixArgs(root, live), '--lock', p.user.name], field);
      const sudo = sudoersFile(p.user, p.index);
      if (sudo) {
        const problem = await visudoProblem(ctx, sudo);
        if (problem) throw new StepDetailsError(`${sudo.field}: visudo rejects the rule: ${problem}`, {});
        // Recorded before the folder is made: reset removes a sudoers.d machineadm created.
        await ctx.host.fs.keepOriginal(sudo.path);
        await ctx.host.fs.mkdirp(SUDOERS_DIR, 0o750);
        await writeFiles(ctx.host.fs, [sudo], ctx.facts.privileged);
      }
      const keys = keysFile(p.user, p.index, accounts);
      if (keys) {
        const dir = `${homeOf(p.user, accounts)}/.ssh`;
        // A ~/.ssh that was there gets its mode and owner back at reset: recorded before they change.
        if ((await sshDirChange(ctx, p, accounts))?.action === 'chmod') await ctx.host.fs.keepOriginal(dir);
        const home = await homeChange(ctx, p, accounts);
        await ctx.host.fs.keepOriginal(keys.path);
        if (home) {
          // The folders above it stay open to the other users (one mkdirp would make them all 0700).
          await ctx.host.fs.mkdirp(home.target.slice(0, home.target.lastIndexOf('/')) || '/', 0o755);
          await ctx.host.fs.mkdirp(home.target, 0o700);
          // Made for the keys, recorded with them: reset removes it with them when it is empty.
          if (keys.owner) await ctx.host.fs.setAttributes(home.target, { owner: keys.owner, record: false });
        }
        await ctx.host.fs.mkdirp(dir, 0o700);
        await ctx.host.fs.setAttributes(dir, { mode: 0o700, ...(keys.owner ? { owner: keys.owner } : {}) });
        await writeFiles(ctx.host.fs, [keys], ctx.facts.privileged);
      }
    }
  },
  // Which users and groups were there, and as what, before machineadm first changed them.
  async undoRecord(ctx) {
    return { ...(await usersUndoRecord(ctx, usersOf(ctx), homeOf)) };
  },
  undo: usersUndo,
};
