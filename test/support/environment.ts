// What the machine running the tests can do. Tests that need root or a Debian package skip with a
// printed reason on a developer's machine, and fail in CI (CI=true), where a missing dependency is
// a broken install step.
import { execFileSync } from 'node:child_process';

export const inCI = process.env.CI === 'true';
export const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

export function hasCommand(name: string): boolean {
  try {
    execFileSync('sh', ['-c', 'command -v "$1"', 'sh', name], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Returns undefined when every requirement holds, else the reason to skip. In CI a missing
 * requirement throws instead, so the suite fails rather than silently skipping.
 */
export function missingRequirement(requirements: { root?: boolean; commands?: string[] }): string | undefined {
  const missing: string[] = [];
  if (requirements.root && !isRoot) missing.push('root');
  for (const c of requirements.commands ?? []) if (!hasCommand(c)) missing.push(c);
  if (missing.length === 0) return undefined;
  const reason = `needs ${missing.join(', ')} (installed by .ci/run)`;
  if (inCI) throw new Error(`CI is missing a test dependency: ${reason}`);
  console.warn(`skipping: ${reason}`);
  return reason;
}
