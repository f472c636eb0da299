// spec.users: local Linux users with their groups, sudo rule, SSH keys and password state.
import { array, boolean, object, optional, string, withDefault } from './dsl.ts';
import { secret } from './secret-field.ts';

// What useradd accepts on Debian and Red Hat alike (a trailing $ for Samba machine accounts).
const USER_NAME = /^[a-z_][a-z0-9_-]{0,30}\$?$/;
const GROUP_NAME = /^[a-z_][a-z0-9_-]{0,31}$/;
const passwdField = (what: string) => (value: string) => (/[:\r\n\0]/.test(value) ? `${what} must not hold ":" or a line break|/etc/passwd separates its fields with ":"` : undefined);
const absolute = (what: string) => (value: string) => (!value.startsWith('/') ? `${what} must be an absolute path|e.g. /home/ops` : passwdField(what)(value));

export const groupName = string({ pattern: GROUP_NAME, patternHint: 'a group name: lowercase letters, digits, "_" and "-", starting with a letter or "_", e.g. docker' });

/** crypt(3) hashes as /etc/shadow holds them: $id$...$... ($6$ SHA-512, $y$ yescrypt, $2b$ bcrypt). */
export const CRYPT_HASH = /^\$[0-9a-z]{1,2}\$[./0-9A-Za-z$=,]+$/;

export const userSpec = object({
  name: string({ pattern: USER_NAME, patternHint: 'a user name: lowercase letters, digits, "_" and "-", starting with a letter or "_", at most 32 characters, e.g. ops', description: 'the user name, e.g. ops', example: 'ops' }),
  gecos: optional(string({ check: passwdField('gecos'), description: 'the comment field of /etc/passwd (full name), e.g. "Operations"', example: 'Operations' })),
  homeDir: optional(string({ check: absolute('homeDir'), description: 'the home directory (default /home/NAME, created with the user), e.g. /home/ops', example: '/home/ops' })),
  shell: optional(string({ check: absolute('shell'), description: 'the login shell (default: useradd\'s), e.g. /bin/bash', example: '/bin/bash' })),
  primaryGroup: optional(string({ pattern: GROUP_NAME, patternHint: 'a group name, e.g. ops', description: 'the primary group, created when missing (default: a group named after the user), e.g. ops', example: 'ops' })),
  groups: optional(array(groupName, { unique: true, description: 'supplementary groups the user is added to (created when missing; the user is never removed from others), e.g. ["docker", "adm"]', example: ['docker', 'adm'] })),
  sudo: optional(
    string({
      minLength: 1,
      check: (v) => (/[\r\n\0]/.test(v) ? 'the sudo rule must be one line|write one rule; the user name is put in front of it' : undefined),
      description: 'the sudoers rule after the user name, written to /etc/sudoers.d/machineadm-NAME (0440), e.g. "ALL=(ALL) NOPASSWD:ALL"', example: 'ALL=(ALL) NOPASSWD:ALL',
    }),
  ),
  sshAuthorizedKeys: optional(
    array(string({ minLength: 1, check: (v) => (/[\r\n\0]/.test(v) ? 'an authorized key must be one line|give one key per item' : undefined) }), {
      description: 'the lines of ~/.ssh/authorized_keys (machineadm owns the file: it holds exactly these), e.g. ["ssh-ed25519 AAAA... ops@example"]', example: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample ops@example'],
    }),
  ),
  lockPassword: withDefault(boolean({ description: 'lock the password (SSH keys still work); not applied when passwordHash is given', example: true }), true),
  passwordHash: optional(
    secret({
      pattern: CRYPT_HASH,
      patternHint: 'a crypt(3) hash as /etc/shadow holds it, e.g. from mkpasswd -m sha-512 (never the password itself)',
      description: 'the password as a crypt(3) hash (e.g. "$6$salt$..." from mkpasswd -m sha-512), literal or { valueFrom: { file | env } }', example: { valueFrom: { file: '/etc/machineadm/ops-password-hash' } },
    }),
  ),
});

export const usersSection = array(userSpec, {
  description: 'local users to create or update (an existing user is updated, never recreated)', example: [{ name: 'ops', groups: ['adm'], sudo: 'ALL=(ALL) NOPASSWD:ALL', sshAuthorizedKeys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample ops@example'] }],
});
