// What every secret source shares and the plan names without loading a source's client.

/** The largest secret file read: tokens, keys and passwords are bytes to a few kilobytes. */
export const MAX_SECRET_FILE_BYTES = 64 * 1024;

/** Where the age identity is looked for when a reference names none. */
export const DEFAULT_AGE_IDENTITY = { linux: '/etc/machineadm/age-identity.txt', windows: 'C:\\ProgramData\\machineadm\\age-identity.txt' } as const;

/** The identity file an age reference is decrypted with on this platform. */
export function ageIdentityPath(reference: { identity?: string | undefined }, platform: 'linux' | 'windows'): string {
  return reference.identity ?? DEFAULT_AGE_IDENTITY[platform];
}

/** What to do about a secret read over the network in an offline run. */
export const OFFLINE_HINT = 'give the value as a file or an age envelope on the machine for an offline run';
