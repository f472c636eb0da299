// How `machineadm reset` undoes prepare/users, from what the step recorded before its first change
// (Step.undoRecord): a user machineadm created is deleted (userdel), with its home folder only when
// nothing is in it but what useradd copied from /etc/skel and files machineadm wrote; a user that
// was there before is never deleted: the fields machineadm changed (comment, home, shell, primary
// group, a password it locked) get their old values back, and it leaves the groups machineadm added
// it to; a group machineadm created is deleted when no user is in it any more. The sudo rule and
// ~/.ssh/authorized_keys are files: reset/files gives them back from their records.
import type { UserSpec } from '../config/schema/index.ts';
import type { Change, CheckResult, StepContext, Undo, UndoContext } from '../engine/step.ts';
import { ConfigError, StepDetailsError } from '../errors.ts';
import { missingFolders } from '../engine/managed-file.ts';
import { isLocked, parseAccounts, prefixArgs, supplementaryGroups, type Accounts, type PasswdEntry } from './accounts.ts';

/** The backups the shadow tools keep of the files they rewrite: machine files they change for machineadm. */
export const ACCOUNT_BACKUPS = ['/etc/passwd-', '/etc/group-', '/etc/shadow-', '/etc/gshadow-', '/etc/subuid-', '/etc/subgid-'];

export type UserBefore =
  | {
      existed: false;
      home: string;
      /** Folders that were not there, outermost first (the home and its missing parents). */
      created: string[];
      /** The gid of a group named after the user that was there before it: userdel may take it with the user. */
      ownGroup?: number;
    }
  | { existed: true; gecos: string; home: string; shell: string; gid: number; locked: boolean };

export interface UsersUndoRecord {
  users?: Record<string, UserBefore>;
  /** Groups machineadm created (false: the group was not there). */
  groups?: Record<string, false>;
  /** "user:group": the user was not in the group before machineadm added it. */
  memberships?: Record<string, false>;
}

export async function readAccounts(ctx: StepContext): Promise<Accounts> {
  const { fs } = ctx.host;
  return parseAccounts(await fs.readText('/etc/passwd'), await fs.readText('/etc/group'), await fs.readText('/etc/shadow'));
}

/**
 * Runs a shadow tool (useradd, usermod, userdel, groupadd, groupdel, chpasswd). Its backups of the
 * account files are recorded first and noted as machineadm's after, so reset gives them back.
 */
export async function runShadowTool(ctx: StepContext, argv: [string, ...string[]], field: string, options: { input?: string; hint?: string } = {}): Promise<void> {
  const { fs } = ctx.host;
  for (const path of ACCOUNT_BACKUPS) await fs.keepOriginal(path, { anyWriter: true });
  const result = await ctx.host.proc.run(argv, { timeoutMs: 60_000, allowFailure: true, ...(options.input !== undefined ? { input: options.input } : {}) });
  for (const path of ACCOUNT_BACKUPS) await fs.noteWritten(path);
  if (result.exitCode !== 0) {
    // chpasswd's input is the hash: only the program and the first line of its complaint are shown.
    const said = result.stderr.trim().split('\n')[0] ?? '';
    throw new StepDetailsError(`${field}: ${argv[0]} exited with code ${result.exitCode}${said ? `: ${said}` : ''}`, { command: argv[0], exitCode: result.exitCode }, {
      hint: options.hint ?? 'fix what the tool says (a user or group that clashes, a locked /etc/passwd) and run again',
    });
  }
}

/** What reset needs to know of the accounts before prepare/users changes them. */
export async function usersUndoRecord(ctx: StepContext, users: readonly UserSpec[], homeOf: (user: UserSpec, accounts: Accounts) => string): Promise<UsersUndoRecord> {
  const accounts = await readAccounts(ctx);
  const record: Required<UsersUndoRecord> = { users: {}, groups: {}, memberships: {} };
  for (const user of users) {
    const entry = accounts.users.get(user.name);
    if (!entry) {
      const home = homeOf(user, accounts);
      const own = accounts.groups.get(user.name);
      record.users[user.name] = { existed: false, home, created: await missingFolders(ctx.host.fs, home), ...(own ? { ownGroup: own.gid } : {}) };
      if (user.primaryGroup === undefined && !accounts.groups.has(user.name)) record.groups[user.name] = false;
    } else {
      record.users[user.name] = { existed: true, gecos: entry.gecos, home: entry.home, shell: entry.shell, gid: entry.gid, locked: isLocked(accounts.passwords.get(user.name)) };
      const have = supplementaryGroups(accounts, user.name);
      for (const g of user.groups ?? []) if (!have.has(g)) record.memberships[`${user.name}:${g}`] = false;
    }
    for (const g of [user.primaryGroup, ...(user.groups ?? [])]) if (g !== undefined && !accounts.groups.has(g)) record.groups[g] = false;
  }
  return record;
}

interface HomeVerdict {
  remove: boolean;
  /** Entries neither /etc/skel nor machineadm put there (machine paths), at most a few. */
  foreign: string[];
}

/**
 * Whether a home folder machineadm's useradd made holds only what useradd copied from /etc/skel
 * (the same bytes) and files machineadm wrote (they have records): then it goes with the user.
 * Anything else is someone's data, and the folder stays.
 */
async function homeVerdict(ctx: StepContext, home: string): Promise<HomeVerdict> {
  const { fs } = ctx.host;
  const foreign: string[] = [];
  const walk = async (dir: string, rel: string): Promise<void> => {
    for (const name of await fs.list(dir)) {
      if (foreign.length >= 5) return;
      const path = `${dir}/${name}`;
      const relPath = rel ? `${rel}/${name}` : name;
      const info = await fs.stat(path);
      if (info?.kind === 'directory') {
        await walk(path, relPath);
        continue;
      }
      if (await fs.written?.read(path)) continue;
      const skel = info?.kind === 'file' ? await fs.readFile(`/etc/skel/${relPath}`) : undefined;
      if (skel !== undefined && skel.equals((await fs.readFile(path)) ?? Buffer.alloc(0))) continue;
      foreign.push(path);
    }
  };
  const info = await fs.stat(home);
  if (info?.kind !== 'directory') return { remove: false, foreign: [] };
  await walk(home, '');
  return { remove: foreign.length === 0, foreign };
}

interface Planned {
  /** `exists`: the account is still there (a reset killed after userdel left only its home). */
  deleteUsers: { name: string; exists: boolean; home?: { path: string; created: string[] }; kept?: string; ownGroup?: number }[];
  /** `leave`: the groups it leaves; `gid`: its primary group after the undo. */
  restoreUsers: { name: string; args: string[]; said: string[]; leave: string[]; gid: number }[];
  deleteGroups: string[];
  /** Users whose password machineadm locked while it was empty: left locked. */
  keptLocked: string[];
  keptGroups: { name: string; why: string }[];
  changes: Change[];
}

function recordOf(ctx: UndoContext): UsersUndoRecord {
  return (ctx.undoRecord ?? {}) as UsersUndoRecord;
}

type CreatedUser = Extract<UserBefore, { existed: false }>;
type ExistingUser = Extract<UserBefore, { existed: true }>;

/**
 * A user machineadm created: userdel, and its home when useradd made it and nothing of anyone else
 * is in it. Once the account is gone (a reset killed after userdel), what is left of its home.
 */
async function planCreatedUser(ctx: UndoContext, name: string, before: CreatedUser, entry: PasswdEntry | undefined, accounts: Accounts, planned: Planned): Promise<void> {
  const homePath = entry?.home ?? before.home;
  // userdel (USERGROUPS_ENAB) deletes the group named after the user with it, also one that was
  // there before machineadm made the user: that one is made again, with its gid.
  if (!entry && before.ownGroup !== undefined && !accounts.groups.has(name)) {
    planned.deleteUsers.push({ name, exists: false, ownGroup: before.ownGroup });
    planned.changes.push({ action: 'create', target: `group ${name}`, detail: `gid ${before.ownGroup}: it was there before machineadm created the user ${name}, and userdel deleted it with the user` });
  }
  const made = before.created.includes(homePath) && (await ctx.host.fs.stat(homePath))?.kind === 'directory';
  const verdict = made ? await homeVerdict(ctx, homePath) : { remove: false, foreign: [] };
  const parents = before.created.filter((d) => homePath.startsWith(`${d}/`));
  const home = verdict.remove ? { path: homePath, created: [...parents, homePath] } : undefined;
  if (!entry) {
    if (home) {
      planned.deleteUsers.push({ name, exists: false, home });
      planned.changes.push({ action: 'delete', target: `${homePath}/`, detail: `home of ${name}, a user machineadm created (already deleted): only /etc/skel's files and machineadm's in it` });
      return;
    }
    // Killed between the home and its parents: the parents useradd made, when empty now.
    const empty = async (d: string) => (await ctx.host.fs.stat(d))?.kind === 'directory' && (await ctx.host.fs.list(d)).length === 0;
    if (made || !(await Promise.all(parents.map(empty))).some(Boolean)) return;
    planned.deleteUsers.push({ name, exists: false, home: { path: homePath, created: parents } });
    planned.changes.push({ action: 'delete', target: `${parents.at(-1)}/`, detail: `made by useradd for the home of ${name}, a user machineadm created (already deleted), when empty` });
    return;
  }
  const kept = !before.created.includes(homePath)
    ? `home ${homePath} kept: it was there before machineadm created the user`
    : made && !verdict.remove
      ? `home ${homePath} kept: it holds what neither /etc/skel nor machineadm put there (${verdict.foreign.join(', ')}${verdict.foreign.length >= 5 ? ', ...' : ''})`
      : undefined;
  planned.deleteUsers.push({ name, exists: true, ...(home ? { home } : {}), ...(kept ? { kept } : {}), ...(before.ownGroup !== undefined ? { ownGroup: before.ownGroup } : {}) });
  planned.changes.push({ action: 'delete', target: `user ${name}`, detail: `created by machineadm (userdel); ${kept ?? (home ? `home ${homePath} removed (only /etc/skel's files and machineadm's in it)` : 'no home folder left')}` });
}

const KEPT_LOCKED = 'left locked: it was empty before machineadm locked it, and unlocking it would let anyone log in without one (set one with passwd)';

/** A user that was there: the fields machineadm changed back, out of the groups it added it to, unlocked. */
function planExistingUser(name: string, before: ExistingUser, entry: PasswdEntry, accounts: Accounts, record: UsersUndoRecord, planned: Planned): void {
  const args: string[] = [];
  const said: string[] = [];
  if (entry.gecos !== before.gecos) (args.push('--comment', before.gecos), said.push(`gecos ${JSON.stringify(entry.gecos)} -> ${JSON.stringify(before.gecos)}`));
  if (entry.home !== before.home) (args.push('--home', before.home), said.push(`home ${entry.home} -> ${before.home}`));
  if (entry.shell !== before.shell) (args.push('--shell', before.shell), said.push(`shell ${entry.shell} -> ${before.shell}`));
  if (entry.gid !== before.gid) (args.push('--gid', String(before.gid)), said.push(`primary group ${entry.gid} -> ${before.gid}`));
  const have = supplementaryGroups(accounts, name);
  const leave = Object.keys(record.memberships ?? {}).filter((k) => k.startsWith(`${name}:`)).map((k) => k.slice(name.length + 1)).filter((g) => have.has(g));
  if (leave.length) (args.push('--groups', [...have].filter((g) => !leave.includes(g)).sort().join(',')), said.push(`groups - ${leave.join(', ')}`));
  const password = accounts.passwords.get(name);
  if (!before.locked && isLocked(password)) {
    // usermod refuses to unlock a password that was empty (exit 0, the account still locked): an
    // account anyone may log in to is not given back; the operator is told instead.
    if (password!.replace(/^!+/, '') === '') {
      planned.keptLocked.push(name);
      planned.changes.push({ action: 'keep', target: `password of user ${name}`, detail: KEPT_LOCKED });
    } else (args.push('--unlock'), said.push('password unlocked (machineadm locked it)'));
  }
  if (args.length === 0) return;
  planned.restoreUsers.push({ name, args, said, leave, gid: before.gid });
  planned.changes.push({ action: 'restore', target: `user ${name}`, detail: `as before machineadm's first run (it was there before: kept): ${said.join('; ')}` });
}

async function planUndo(ctx: UndoContext): Promise<Planned> {
  const record = recordOf(ctx);
  const planned: Planned = { deleteUsers: [], restoreUsers: [], deleteGroups: [], keptGroups: [], keptLocked: [], changes: [] };
  // Nothing recorded (spec.users never ran here, or on Windows): the account files are not read.
  if (Object.keys(record.users ?? {}).length + Object.keys(record.groups ?? {}).length === 0) return planned;
  const accounts = await readAccounts(ctx);
  for (const [name, before] of Object.entries(record.users ?? {}).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const entry = accounts.users.get(name);
    if (!before.existed) await planCreatedUser(ctx, name, before, entry, accounts, planned);
    else if (entry) planExistingUser(name, before, entry, accounts, record, planned);
  }
  // A group machineadm created goes once no user that stays is in it or has it as primary group,
  // as they will be after this undo.
  const deleted = new Set(planned.deleteUsers.filter((u) => u.exists).map((u) => u.name));
  const restored = new Map(planned.restoreUsers.map((u) => [u.name, u]));
  for (const name of Object.keys(record.groups ?? {}).sort()) {
    const group = accounts.groups.get(name);
    if (!group) continue;
    const members = group.members.filter((m) => !deleted.has(m) && !restored.get(m)?.leave.includes(name));
    const primary = [...accounts.users.values()].filter((u) => !deleted.has(u.name) && (restored.get(u.name)?.gid ?? u.gid) === group.gid).map((u) => u.name);
    if (members.length || primary.length) {
      const why = `created by machineadm, kept: ${[...members.map((m) => `${m} is in it`), ...primary.map((u) => `it is ${u}'s primary group`)].join(', ')}`;
      planned.keptGroups.push({ name, why });
      planned.changes.push({ action: 'keep', target: `group ${name}`, detail: why });
      continue;
    }
    planned.deleteGroups.push(name);
    planned.changes.push({ action: 'delete', target: `group ${name}`, detail: 'created by machineadm (groupdel)' });
  }
  return planned;
}

export const usersUndo: Undo = {
  // prepare/users refuses on Windows, so no Windows run made a user to undo.
  platforms: ['linux'],
  summary: 'delete the users and groups machineadm created, give users that were there before back what machineadm changed',
  async preflight(ctx) {
    const planned = await planUndo(ctx);
    const needed = [...(planned.deleteUsers.some((u) => u.exists) ? ['userdel'] : []), ...(planned.deleteGroups.length ? ['groupdel'] : []), ...(planned.deleteUsers.some((u) => u.ownGroup !== undefined) ? ['groupadd'] : []), ...(planned.restoreUsers.length ? ['usermod'] : [])];
    for (const tool of needed) {
      if (!(await ctx.host.proc.which(tool))) {
        throw new ConfigError([{ path: 'spec.users', message: `${tool} is not installed (not found on PATH): reset cannot undo the users machineadm made`, hint: 'install passwd (Debian) or shadow-utils' }]);
      }
    }
  },
  async check(ctx): Promise<CheckResult> {
    const planned = await planUndo(ctx);
    // A password left locked is no change, but the run says so (a warning), not only the plan.
    const pending = planned.deleteUsers.length + planned.restoreUsers.length + planned.deleteGroups.length + planned.keptLocked.length;
    return { done: pending === 0, changes: planned.changes };
  },
  async apply(ctx) {
    const planned = await planUndo(ctx);
    const root = ctx.host.fs.root;
    const live = ctx.host.fs.isLiveRoot;
    const warnings: string[] = [];
    for (const u of planned.deleteUsers) {
      // userdel refuses a user with running processes (exit 8): they are the operator's to stop.
      if (u.exists) await runShadowTool(ctx, ['userdel', ...prefixArgs(root, live), u.name], `user ${u.name}`, { hint: `stop the processes of ${u.name} (ps -u ${u.name}) or log it out, then run reset again` });
      if (u.ownGroup !== undefined && !(await readAccounts(ctx)).groups.has(u.name)) {
        await runShadowTool(ctx, ['groupadd', ...prefixArgs(root, live), '--gid', String(u.ownGroup), u.name], `group ${u.name}`);
        ctx.log(`group ${u.name}: made again with gid ${u.ownGroup} (it was there before machineadm created the user; userdel deleted it)`);
      }
      if (u.home) {
        await ctx.host.fs.remove(u.home.path);
        // The home's parents useradd made (/home on an image without one), when nothing else is in them.
        for (const d of [...u.home.created].reverse()) if (d !== u.home.path) await ctx.host.fs.removeFolderIfEmpty(d);
        ctx.log(`user ${u.name}: ${u.exists ? 'deleted, with' : 'removed'} its home ${u.home.path}`);
      } else if (u.exists) ctx.log(`user ${u.name}: deleted${u.kept ? `; ${u.kept}` : ''}`);
      if (u.kept) warnings.push(`user ${u.name}: ${u.kept}`);
    }
    for (const u of planned.restoreUsers) {
      await runShadowTool(ctx, ['usermod', ...prefixArgs(root, live), ...u.args, u.name], `user ${u.name}`);
      ctx.log(`user ${u.name}: ${u.said.join('; ')}`);
    }
    // userdel (USERGROUPS_ENAB) may have deleted a user's own group already.
    const groupsNow = (await readAccounts(ctx)).groups;
    for (const g of planned.deleteGroups) if (groupsNow.has(g)) await runShadowTool(ctx, ['groupdel', ...prefixArgs(root, live), g], `group ${g}`);
    for (const g of planned.keptGroups) warnings.push(`group ${g.name}: ${g.why}`);
    for (const name of planned.keptLocked) warnings.push(`password of user ${name}: ${KEPT_LOCKED}`);
    return warnings.length ? { warning: warnings.join('; ') } : {};
  },
};
