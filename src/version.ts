// Build identity: the bundler defines __MACHINEADM_BUILD__; running from source reads package.json.
import pkg from '../package.json' with { type: 'json' };

export interface BuildInfo {
  version: string;
  commit: string;
  /** minisign public key (base64 line) the release was signed with, built into the binary. */
  releasePublicKey?: string;
}

declare const __MACHINEADM_BUILD__: BuildInfo | undefined;

export const buildInfo: BuildInfo =
  typeof __MACHINEADM_BUILD__ !== 'undefined' ? __MACHINEADM_BUILD__ : { version: pkg.version, commit: 'source' };
