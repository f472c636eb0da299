// What tells a Windows reboot from a rerun: apart from the Windows host, because the facts every
// phase command gathers first need it on every platform, and the host (its scripts) only on Windows.

export interface BootIdentity {
  /** HKLM\...\PrefetchParameters BootId, when present. */
  bootId?: string;
  /** Win32_OperatingSystem.LastBootUpTime, ISO 8601 UTC. */
  lastBootUpTime: string;
  /** Win32_OperatingSystem.BuildNumber. */
  build: string;
}

/** One value that changes at every boot: BootId and LastBootUpTime together (either changing means a reboot). */
export function bootIdOf(identity: BootIdentity): string {
  return `${identity.bootId ?? '-'}@${identity.lastBootUpTime}`;
}
