// Windows: the Node release's Authenticode signature removed from the base binary, and the PE
// checksum of the finished executable.
import { BuildError } from './common.mjs';

function peLayout(exe) {
  const pe = exe.readUInt32LE(0x3c);
  if (exe.toString('latin1', pe, pe + 4) !== 'PE\0\0') throw new BuildError('the Windows base binary is not a PE file');
  const optional = pe + 24;
  const magic = exe.readUInt16LE(optional);
  if (magic !== 0x20b) throw new BuildError('the Windows base binary is not a PE32+ (64-bit) file');
  // Data directory 4 is the certificate table; its "address" is a file offset.
  return { checksum: optional + 64, security: optional + 112 + 4 * 8 };
}

/**
 * Removes the Node release's Authenticode signature. Injecting the blob changes the signed bytes,
 * so the signature would be invalid anyway; an unsigned file is honest about it, and the publisher
 * signs the result with its own certificate (signtool, osslsigncode).
 */
export function removeAuthenticode(exe) {
  const { security } = peLayout(exe);
  const offset = exe.readUInt32LE(security);
  const size = exe.readUInt32LE(security + 4);
  if (offset === 0 || size === 0) return exe;
  if (offset + size !== exe.length) throw new BuildError('the Windows base binary has a signature that is not at its end; cannot remove it safely');
  const out = Buffer.from(exe.subarray(0, offset));
  out.writeUInt32LE(0, security);
  out.writeUInt32LE(0, security + 4);
  return out;
}

/** The PE image checksum (the algorithm of imagehlp's CheckSumMappedFile), written in place. */
export function fixPeChecksum(exe) {
  const { checksum } = peLayout(exe);
  exe.writeUInt32LE(0, checksum);
  let sum = 0;
  const whole = exe.length - (exe.length % 2);
  for (let i = 0; i < whole; i += 2) {
    sum += exe.readUInt16LE(i);
    sum = (sum & 0xffff) + (sum >>> 16);
  }
  if (exe.length % 2) {
    sum += exe[exe.length - 1];
    sum = (sum & 0xffff) + (sum >>> 16);
  }
  sum = (sum & 0xffff) + (sum >>> 16);
  exe.writeUInt32LE((sum + exe.length) >>> 0, checksum);
  return exe;
}
