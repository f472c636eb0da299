// Self-verification: machineadm checks its own executable against its .minisig with the release
// key built into it, before it changes anything (verify --self, security.requireSignedBinary).
import type { Host } from '../host/index.ts';
import { UsageError, VerificationError } from '../errors.ts';
import { buildInfo } from '../version.ts';
import { parsePublicKey, parseSignature } from './minisign.ts';
import { verifyStream, type VerifiedSignature } from './signature.ts';

export interface SelfVerifyRequest {
  /** The running executable (process.execPath in the packaged binary). */
  executable: string;
  /** False when running from source: execPath is then Node itself, not machineadm. */
  packaged: boolean;
  /** Default: `<executable>.minisig`. */
  signaturePath?: string;
  /** Base64 key line; default: the release key built into this binary. */
  publicKey?: string;
  requirePrehashed?: boolean;
}

export interface SelfVerifyResult extends VerifiedSignature {
  executable: string;
  signaturePath: string;
  keySource: 'given' | 'built-in';
}

/**
 * `cannotVerify` makes the error for a check that cannot be made here (running from source, no
 * key): a usage error for "verify --self" (exit 2: give -P), a failed verification where a signed
 * binary is required.
 */
export async function verifySelf(host: Pick<Host, 'local'>, request: SelfVerifyRequest, cannotVerify: (message: string, hint: string) => Error = (m, hint) => new UsageError(m, { hint })): Promise<SelfVerifyResult> {
  if (!request.packaged) {
    throw cannotVerify(
      `self-verification needs the packaged machineadm binary; this is machineadm running from source under ${request.executable}`,
      'run the released binary (machineadm-linux-x64, ...), or check a file with "machineadm verify FILE"',
    );
  }
  const keyText = request.publicKey ?? buildInfo.releasePublicKey;
  if (!keyText) {
    throw cannotVerify('this build has no release public key built in, so it cannot verify itself', 'give the key with -P <base64 key line> (or security.releasePublicKey), or use a release build');
  }
  const publicKey = parsePublicKey(keyText, request.publicKey ? 'given with -P' : 'built into this binary');
  const signaturePath = request.signaturePath ?? `${request.executable}.minisig`;
  const sigData = await host.local.readFile(signaturePath);
  if (sigData === undefined) {
    throw new VerificationError(`no signature at ${signaturePath} to verify ${request.executable} with`, {
      hint: 'download the .minisig published with the binary and put it next to it, or give its path with -x',
    });
  }
  const signature = parseSignature(sigData, signaturePath);
  const verified = await verifyStream(host.local.readBlocks(request.executable), signature, publicKey, { fileName: request.executable, requirePrehashed: request.requirePrehashed ?? false });
  return { ...verified, executable: request.executable, signaturePath, keySource: request.publicKey ? 'given' : 'built-in' };
}
