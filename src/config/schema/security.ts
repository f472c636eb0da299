// spec.security: trust and network policy for the run.
import { boolean, object, optional, string, withDefault } from './dsl.ts';

export const securitySection = object({
  requireSignedBinary: withDefault(boolean({ description: 'init, prepare, provision and report first verify this executable against <executable>.minisig and stop with exit 3 if it fails', example: true }), false),
  offline: withDefault(boolean({ description: 'never use the network, as if every run had --offline: a source or step that would fails at once', example: true }), false),
  releasePublicKey: optional(
    string({
      pattern: /^RW[A-Za-z0-9+/]{54}$/,
      patternHint: 'give the base64 key line of a minisign public key (56 characters starting with RW)',
      description: 'minisign public key (base64 key line) to verify machineadm with, instead of the release key built into it',
      example: 'RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3',
    }),
  ),
});
