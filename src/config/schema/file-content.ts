// spec.files content: decoding the three encodings. Pure (zlib is computation, not I/O).

export type FileEncoding = 'plain' | 'base64' | 'gzip+base64';

const BASE64 = /^[A-Za-z0-9+/\s]*={0,2}\s*$/;

/**
 * The most a content may hold once decoded: a compressed bomb (1 MB that inflates to gigabytes) is
 * refused as it inflates, before it is held in memory whole. Also the most all inline contents
 * may hold together (src/config/budgets.ts): inflating takes twice the output at its peak, and
 * plan and run hold each file and its text, so 32 MiB took a plan to 256 MiB.
 */
export const MAX_INLINE_CONTENT_BYTES = 16 * 1024 * 1024;
const MAX_MIB = MAX_INLINE_CONTENT_BYTES / (1024 * 1024);

/**
 * The bytes of a file's content, or an error message saying why it cannot be decoded. `limit`
 * (at most MAX_INLINE_CONTENT_BYTES) is the most it may produce: a problem marked tooLarge says so.
 */
export function decodeContent(content: string, encoding: FileEncoding, limit: number = MAX_INLINE_CONTENT_BYTES): { bytes: Buffer } | { problem: string; tooLarge?: true } {
  const tooLarge = { problem: `${encoding === 'gzip+base64' ? `expands to more than ${MAX_MIB} MiB once decompressed` : `is more than ${MAX_MIB} MiB`}|give a file that large as source: { url, sha256 }, which is checked and written as it downloads`, tooLarge: true as const };
  if (encoding === 'plain') {
    const bytes = Buffer.from(content, 'utf8');
    return bytes.length > limit ? tooLarge : { bytes };
  }
  if (!BASE64.test(content)) return { problem: `is not valid base64 (encoding is "${encoding}")` };
  const text = content.replace(/\s+/g, '');
  // Every 4 characters make 3 bytes, and 2 or 3 characters the last 1 or 2: a single one left over
  // is no byte at all (a value cut short), which the decoder would drop without a word.
  if (text.replace(/=+$/, '').length % 4 === 1) return { problem: `is not valid base64 (encoding is "${encoding}"): one character more than whole bytes, as if cut short|encode the whole file again (base64 -w0 FILE, or gzip -c FILE | base64 -w0)` };
  const raw = Buffer.from(text, 'base64');
  if (encoding === 'base64') return raw.length > limit ? tooLarge : { bytes: raw };
  try {
    // node:zlib only for gzip content: configuration is validated at every start of most commands.
    return { bytes: process.getBuiltinModule('node:zlib').gunzipSync(raw, { maxOutputLength: Math.max(1, limit) }) };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') return tooLarge;
    return { problem: `is base64 but not gzip data (${(error as Error).message})` };
  }
}

/** Why a machine path for spec.files is refused, or undefined when it is acceptable. */
export function filePathProblem(path: string): string | undefined {
  if (path.includes('\0')) return 'contains a NUL character';
  // A Windows machine's files are named with their drive (C:\k\config.json).
  const windows = /^[A-Za-z]:\\/.test(path);
  if (!path.startsWith('/') && !windows) return `"${path}" is not absolute|write the full path, e.g. /etc/example.conf (or C:\\k\\example.conf on Windows)`;
  if (windows) return path.split(/[\\/]/).includes('..') ? `"${path}" contains ".."|write the path without ".." segments` : /[<>"|?*]/.test(path.slice(2)) ? `"${path}" contains a character Windows does not allow in a path (< > " | ? *)|remove it` : path.endsWith('\\') ? `"${path}" ends with "\\" (a directory)|name the file, not its directory` : undefined;
  // The root's path mapping splits at backslashes too (a separator on Windows): what it would refuse
  // later, after other steps ran, is refused here.
  if (path.split(/[\\/]/).includes('..')) return `"${path}" contains ".."|write the path without ".." segments`;
  if (path.split('/').includes('.')) return `"${path}" contains "."|write the path without "." segments`;
  if (path.endsWith('/')) return `"${path}" ends with "/" (a directory)|name the file, not its directory`;
  return undefined;
}
