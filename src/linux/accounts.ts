// /etc/passwd, /etc/group and /etc/shadow as the users step reads them (pure parsing), and the
// flags that point the shadow tools at a scratch --root.

export interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
  gecos: string;
  home: string;
  shell: string;
}

export interface GroupEntry {
  name: string;
  gid: number;
  members: string[];
}

export interface Accounts {
  users: Map<string, PasswdEntry>;
  groups: Map<string, GroupEntry>;
  /** The password field of /etc/shadow by user name ("!" or "*" prefixed: locked). */
  passwords: Map<string, string>;
}

function fields(text: string | undefined): string[][] {
  return (text ?? '')
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => line.split(':'));
}

export function parseAccounts(passwd: string | undefined, group: string | undefined, shadow: string | undefined): Accounts {
  const users = new Map<string, PasswdEntry>();
  for (const [name = '', , uid = '', gid = '', gecos = '', home = '', shell = ''] of fields(passwd)) {
    users.set(name, { name, uid: Number(uid), gid: Number(gid), gecos, home, shell });
  }
  const groups = new Map<string, GroupEntry>();
  for (const [name = '', , gid = '', members = ''] of fields(group)) groups.set(name, { name, gid: Number(gid), members: members.split(',').filter(Boolean) });
  const passwords = new Map<string, string>();
  for (const [name = '', password = ''] of fields(shadow)) passwords.set(name, password);
  return { users, groups, passwords };
}

export function isLocked(password: string | undefined): boolean {
  return password !== undefined && (password.startsWith('!') || password.startsWith('*'));
}

/** The groups a user is in by /etc/group's member lists (not counting the primary group). */
export function supplementaryGroups(accounts: Accounts, user: string): Set<string> {
  return new Set([...accounts.groups.values()].filter((g) => g.members.includes(user)).map((g) => g.name));
}

/**
 * Flags for useradd, usermod and groupadd: --prefix makes them read and write ROOT/etc/* without
 * chroot (their own libraries stay the host's). chpasswd has only --root (chroot), see chrootArgs.
 */
export function prefixArgs(root: string, live: boolean): string[] {
  return live ? [] : ['--prefix', root];
}

export function chrootArgs(root: string, live: boolean): string[] {
  return live ? [] : ['--root', root];
}
