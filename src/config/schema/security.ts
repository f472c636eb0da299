// spec.security: trust and network policy for the run.
import { boolean, object, optional, string, withDefault } from './dsl.ts';

export const securitySection = object({
  requireSignedBinary: withDefault(boolean(), false),
  offline: withDefault(boolean(), false),
  releasePublicKey: optional(string({ minLength: 1, description: 'minisign public key (base64) to verify machineadm and artifacts with' })),
});
