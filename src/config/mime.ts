// MIME multipart user data (as cloud-init writes and reads it): machineadm takes the parts whose
// content type is application/machineadm.cluster.x-k8s.io (or text/x-machineadm-config, the form
// cloud-init keeps) and leaves the rest (shell scripts,
// cloud-config) to other tools. Real user data is often sloppy, so this reader tolerates CRLF or
// LF line ends, a missing blank line after a part's headers, and a missing final boundary.
// Pure: no I/O (zlib is computation only).
import { BUDGETS, LoadBudget, SMALLER_HINT, formatMiB } from './budgets.ts';

export const MACHINECONFIG_CONTENT_TYPE = 'application/machineadm.cluster.x-k8s.io';
// cloud-init's own `devel make-mime` writes every part as text/<given type>, so user data built
// with it carries text/application/machineadm.cluster.x-k8s.io: taken as the same thing.
const MAKE_MIME_CONTENT_TYPE = `text/${MACHINECONFIG_CONTENT_TYPE}`;
/**
 * The type cloud-init keeps intact and machineadm's cloud-init part handler claims
 * (`make-mime -a FILE:x-machineadm-config`): the same user data works with and without cloud-init.
 */
export const CLOUD_INIT_CONTENT_TYPE = 'text/x-machineadm-config';

/** Whether a part is machineadm's: yes, no, or "meant to be, but mistyped" (an error, not a silent skip). */
export function machineConfigPart(contentType: string): 'yes' | 'no' | 'mistyped' {
  if (contentType === MACHINECONFIG_CONTENT_TYPE || contentType === MAKE_MIME_CONTENT_TYPE || contentType === CLOUD_INIT_CONTENT_TYPE) return 'yes';
  return contentType.includes('machineadm') ? 'mistyped' : 'no';
}

export interface MimePart {
  /** 1-based position among all parts (nested parts are numbered in document order). */
  index: number;
  contentType: string;
  body: Buffer;
  /** Line of the whole document where the body starts, when the body is the document's own text. */
  firstLine?: number;
  /**
   * No blank line ended the headers and the body starts with a line shaped like a header
   * (`apiVersion: ...`): cloud-init's parser reads that line as a header and the body as empty.
   */
  readOtherwiseByCloudInit?: boolean;
}

export class MimeError extends Error {
  readonly line: number | undefined;
  readonly hint: string | undefined;
  constructor(message: string, line?: number, hint?: string) {
    super(message);
    this.line = line;
    this.hint = hint;
  }
}

const GZIP_MAGIC = [0x1f, 0x8b];

export function isGzip(bytes: Uint8Array): boolean {
  return bytes[0] === GZIP_MAGIC[0] && bytes[1] === GZIP_MAGIC[1];
}

/**
 * Decompresses gzip content, refusing to produce more than maxBytes, nor more than is left of the
 * sources' total: a thousand small gzip bombs are one big one.
 */
export function gunzipLimited(bytes: Uint8Array, maxBytes: number, budget: LoadBudget = new LoadBudget(), what = 'the part'): Buffer {
  const limit = Math.max(1, Math.min(maxBytes, budget.sourceBytes));
  let out: Buffer;
  try {
    // node:zlib only for compressed user data: loading it is a good part of a start.
    out = process.getBuiltinModule('node:zlib').gunzipSync(bytes, { maxOutputLength: limit });
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ERR_BUFFER_TOO_LARGE' || /larger than/.test((error as Error).message)) {
      if (limit < maxBytes) {
        // Past what is left of the sources' total: loading stops here (LoadBudget.exhausted).
        budget.sourceBytes = -1;
        throw new MimeError(`gzip content expands beyond the ${formatMiB(BUDGETS.sourceBytes)} all sources may hold together (as read, gzip undone)`, undefined, SMALLER_HINT);
      }
      throw new MimeError(`gzip content expands beyond the limit of ${maxBytes} bytes`, undefined, 'a configuration is never that large');
    }
    throw new MimeError(`gzip content is corrupt (${(error as Error).message})`, undefined, `compress ${what} again with gzip; a truncated download is the usual cause`);
  }
  budget.spendBytes(out.length);
  return out;
}

/**
 * User data that is base64 text as a whole (a tool encoded it once more than the metadata service
 * needed; nodeadm decodes such user data too): its decoded bytes; undefined for anything else.
 */
export function unwrapBase64(bytes: Uint8Array): Buffer | undefined {
  const compact = Buffer.from(bytes).toString('latin1').replace(/\s+/g, '');
  if (compact.length < 8 || compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(compact)) return undefined;
  return Buffer.from(compact, 'base64');
}

interface Header {
  name: string;
  value: string;
}

/**
 * The lines of a document: where each starts, in one typed array, and each line's text (without
 * its line break) made only when asked for. An object per line took 800 MiB for 7 MiB of empty lines.
 */
class Lines {
  readonly length: number;
  readonly source: string;
  // starts[i] is where line i starts; starts[length] is one past the end, as if a line followed.
  private readonly starts: Uint32Array;
  constructor(source: string) {
    let count = 1;
    for (let lf = source.indexOf('\n'); lf !== -1; lf = source.indexOf('\n', lf + 1)) count++;
    const starts = new Uint32Array(count + 1);
    let n = 1;
    for (let lf = source.indexOf('\n'); lf !== -1; lf = source.indexOf('\n', lf + 1)) starts[n++] = lf + 1;
    starts[count] = source.length + 1;
    this.source = source;
    this.length = count;
    this.starts = starts;
  }
  start(i: number): number {
    return this.starts[i]!;
  }
  /** Offset of the line break that ends it (the document's length for a last line without one). */
  end(i: number): number {
    const start = this.starts[i]!;
    const stop = this.starts[i + 1]! - 1;
    return stop > start && this.source.charCodeAt(stop - 1) === 0x0d ? stop - 1 : stop;
  }
  text(i: number): string {
    return this.source.slice(this.start(i), this.end(i));
  }
}

// Any RFC 5322 field name (printable ASCII but the colon) makes a header line, in any order
// (Subject:, Number-Attachments:, ...). A part whose blank line is missing starts its YAML right
// after the headers, so a MachineConfig's own top-level keys end the headers instead.
const HEADER_LINE = /^([!-9;-~]+)[ \t]*:(.*)$/;
const MACHINECONFIG_KEYS = new Set(['apiversion', 'kind', 'metadata', 'spec']);

function readHeaders(lines: Lines, start: number, to = lines.length): { headers: Header[]; next: number; blankLine: boolean } {
  const headers: Header[] = [];
  let i = start;
  while (i < to) {
    const line = lines.text(i);
    const match = HEADER_LINE.exec(line);
    if (match && !MACHINECONFIG_KEYS.has(match[1]!.toLowerCase())) {
      headers.push({ name: match[1]!.toLowerCase(), value: match[2]!.trim() });
      i++;
    } else if (/^[ \t]+\S/.test(line) && headers.length > 0) {
      headers[headers.length - 1]!.value += ' ' + line.trim();
      i++;
    } else break;
  }
  // The blank line that should end the headers; tolerated when missing.
  const blankLine = i < to && lines.text(i) === '';
  if (blankLine) i++;
  return { headers, next: i, blankLine };
}

function header(headers: Header[], name: string): string | undefined {
  return headers.find((h) => h.name === name)?.value;
}

function mediaType(value: string | undefined): string {
  return (value ?? 'text/plain').split(';')[0]!.trim().toLowerCase();
}

function parameter(value: string | undefined, name: string): string | undefined {
  if (!value) return undefined;
  const re = new RegExp(`;\\s*${name}\\s*=\\s*("([^"]*)"|[^;\\s]+)`, 'i');
  const m = re.exec(value);
  return m ? (m[2] ?? m[1]) : undefined;
}

// latin1 keeps one character per byte, so offsets into the text are offsets into the bytes.
function splitLines(text: string): Lines {
  return new Lines(text);
}

/** True when the bytes are a MIME document whose top-level type is multipart/*. */
export function isMultipart(bytes: Uint8Array): boolean {
  const head = Buffer.from(bytes.subarray(0, 8192)).toString('latin1');
  const { headers } = readHeaders(splitLines(head), 0);
  return mediaType(header(headers, 'content-type')).startsWith('multipart/') && headers.length > 0;
}

/**
 * User data that is one MIME part with no multipart around it (headers naming a Content-Type, a
 * blank line, the body), as cloud-init reads such a message: the part, with its transfer encoding
 * and gzip undone; undefined when the bytes do not start with such headers.
 */
export function singlePart(bytes: Uint8Array, maxBytes: number, budget: LoadBudget = new LoadBudget()): MimePart | undefined {
  // Only the head decides (a configuration starts with apiVersion, kind or a comment).
  const { headers } = readHeaders(splitLines(Buffer.from(bytes.subarray(0, 8192)).toString('latin1')), 0);
  const type = header(headers, 'content-type');
  if (type === undefined || mediaType(type).startsWith('multipart/')) return undefined;
  const text = Buffer.from(bytes).toString('latin1');
  const lines = splitLines(text);
  const out: MimePart[] = [];
  leaf({ text, lines, budget }, 0, lines.length, out, maxBytes, 0);
  return out[0];
}

/**
 * Whether cloud-init reads these bytes as a MIME message too: cloud-init 22.4
 * (user_data.convert_string) does only when "MIME-Version:" is in the first 4096 bytes; otherwise
 * the headers are text and no part handler sees the parts.
 */
export function mimeForCloudInit(bytes: Uint8Array): boolean {
  return /mime-version:/i.test(Buffer.from(bytes.subarray(0, 4096)).toString('latin1'));
}

/** Every leaf part, nested multiparts flattened, with transfer encodings and gzip undone. */
export function splitMultipart(bytes: Uint8Array, maxBytes: number, budget: LoadBudget = new LoadBudget()): MimePart[] {
  const text = Buffer.from(bytes).toString('latin1');
  const parts: MimePart[] = [];
  const lines = splitLines(text);
  collect({ text, lines, budget }, 0, lines.length, parts, maxBytes, 0);
  return parts;
}

interface Document {
  text: string;
  lines: Lines;
  /** What is left of the whole configuration's totals (./budgets.ts). */
  budget: LoadBudget;
}

function collect(doc: Document, from: number, to: number, out: MimePart[], maxBytes: number, depth: number): void {
  if (depth > 5) throw new MimeError('multipart nested more than 5 levels deep', from + 1, 'put all parts in one multipart/mixed document, as cloud-init make-mime writes it');
  const { headers, next } = readHeaders(doc.lines, from, to);
  const type = header(headers, 'content-type');
  const boundary = parameter(type, 'boundary');
  if (!boundary) throw new MimeError('multipart user data without a boundary parameter', from + 1, 'write Content-Type: multipart/mixed; boundary="..."');
  const delimiter = `--${boundary}`;
  const starts: number[] = [];
  let end = to;
  for (let i = next; i < to; i++) {
    const line = doc.lines.text(i).trimEnd();
    if (line === `${delimiter}--`) {
      end = i;
      break;
    }
    if (line === delimiter) starts.push(i);
  }
  // A missing final boundary: the last part runs to the end of the document.
  for (let k = 0; k < starts.length; k++) {
    const partFrom = starts[k]! + 1;
    const partTo = k + 1 < starts.length ? starts[k + 1]! : end;
    leaf(doc, partFrom, partTo, out, maxBytes, depth);
  }
}

function leaf(doc: Document, from: number, to: number, out: MimePart[], maxBytes: number, depth: number): void {
  const { headers, next, blankLine } = readHeaders(doc.lines, from, to);
  const otherwise = !blankLine && headers.length > 0 && next < to && HEADER_LINE.test(doc.lines.text(next));
  const contentType = mediaType(header(headers, 'content-type'));
  if (contentType.startsWith('multipart/')) {
    collect(doc, from, to, out, maxBytes, depth + 1);
    return;
  }
  doc.budget.spendMimePart();
  const index = out.length + 1;
  if (contentType.startsWith('message/')) {
    embeddedMessage(doc, { from, next, to, index, contentType, headers }, out, maxBytes, depth);
    return;
  }
  // The body is the bytes as sent: a gzip part without a transfer encoding holds CR and LF bytes
  // that are content. Only the line break before the next delimiter belongs to the delimiter.
  const bodyStart = next < doc.lines.length ? doc.lines.start(next) : doc.text.length;
  const bodyEnd = to < doc.lines.length ? Math.max(bodyStart, doc.lines.end(to - 1)) : doc.text.length;
  const raw = Buffer.from(doc.text.slice(bodyStart, Math.max(bodyStart, bodyEnd)), 'latin1');
  const declared = header(headers, 'content-transfer-encoding')?.toLowerCase();
  const encoding = declared ?? '7bit';
  let body: Buffer;
  let firstLine: number | undefined = next + 1;
  const undeclaredBase64 = declared === undefined && machineConfigPart(contentType) === 'yes' ? base64WithoutHeader(raw) : undefined;
  if (undeclaredBase64) {
    body = undeclaredBase64;
    firstLine = undefined;
  } else if (encoding === 'base64') {
    const compact = raw.toString('latin1').replace(/\s+/g, '');
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) throw new MimeError(`part ${index} says base64 but holds other characters`, next + 1, 'encode the part with base64, or drop its Content-Transfer-Encoding header');
    body = Buffer.from(compact, 'base64');
    firstLine = undefined;
  } else if (encoding === 'quoted-printable') {
    body = decodeQuotedPrintable(raw.toString('latin1'));
    firstLine = undefined;
  } else if (encoding === '7bit' || encoding === '8bit' || encoding === 'binary') {
    // Compressed bytes stay exactly as sent; text is read line by line (CRLF or LF, one final line
    // break, blank lines before the delimiter dropped), as YAML and scripts expect it.
    body = isGzip(raw) ? raw : textBody(doc.lines, next, to);
  } else {
    throw new MimeError(`part ${index} (${contentType}) has Content-Transfer-Encoding ${encoding}, which machineadm cannot decode`, from + 1, 'send the part as base64, quoted-printable, or as it is (7bit, 8bit, binary)');
  }
  const encodingHeader = (header(headers, 'content-encoding') ?? '').toLowerCase();
  if (isGzip(body) || encodingHeader === 'gzip') {
    try {
      body = gunzipLimited(body, maxBytes, doc.budget);
    } catch (error) {
      if (error instanceof MimeError) throw new MimeError(`part ${index} (${contentType}): ${error.message}`, from + 1, error.hint);
      throw error;
    }
    firstLine = undefined;
  }
  out.push({ index, contentType, body, ...(firstLine !== undefined ? { firstLine } : {}), ...(otherwise ? { readOtherwiseByCloudInit: true } : {}) });
}

/**
 * A message/rfc822 (or message/global) part holds a whole message: its headers, then one part or a
 * multipart, read like the user data around it (cloud-init's parser walks into it too). Other
 * message/* types (partial, external-body) hold a piece or a pointer machineadm cannot read, and
 * may hold a MachineConfig: refused, never passed over.
 */
function embeddedMessage(doc: Document, part: { from: number; next: number; to: number; index: number; contentType: string; headers: Header[] }, out: MimePart[], maxBytes: number, depth: number): void {
  const { from, next, to, index, contentType, headers } = part;
  if (contentType !== 'message/rfc822' && contentType !== 'message/global') {
    throw new MimeError(`part ${index} (${contentType}) is a piece of or a pointer to a message, which machineadm cannot read`, from + 1, 'send each part whole in one multipart/mixed document, as cloud-init make-mime writes it');
  }
  const encoding = (header(headers, 'content-transfer-encoding') ?? '7bit').toLowerCase();
  if (encoding !== '7bit' && encoding !== '8bit' && encoding !== 'binary') {
    throw new MimeError(`part ${index} (${contentType}) has Content-Transfer-Encoding ${encoding}; an embedded message must be sent as it is (RFC 2046)`, from + 1, 'drop the Content-Transfer-Encoding header of the message/rfc822 part and encode the parts inside it instead');
  }
  if (depth >= 5) throw new MimeError('multipart nested more than 5 levels deep', from + 1, 'put all parts in one multipart/mixed document, as cloud-init make-mime writes it');
  const inner = readHeaders(doc.lines, next, to);
  if (mediaType(header(inner.headers, 'content-type')).startsWith('multipart/')) collect(doc, next, to, out, maxBytes, depth + 1);
  else leaf(doc, next, to, out, maxBytes, depth + 1);
}

/**
 * A machineadm part with no Content-Transfer-Encoding header whose body is base64 (standard
 * alphabet, padded, line breaks ignored): decoded, as nodeadm reads its NodeConfig parts. A
 * MachineConfig in YAML or JSON always holds a character base64 has not (`:`, a space), so a
 * plain body is never mistaken for one.
 */
function base64WithoutHeader(raw: Buffer): Buffer | undefined {
  const compact = raw.toString('latin1').replace(/[\r\n]+/g, '');
  if (compact.length === 0 || compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(compact)) return undefined;
  return Buffer.from(compact, 'base64');
}

// Each line followed by LF: the lines' span with every CRLF made LF (a line's CR before its LF is
// not part of the line), in one piece rather than a string per line.
function textBody(lines: Lines, from: number, to: number): Buffer {
  let last = to;
  while (last > from && lines.start(last - 1) === lines.end(last - 1)) last--;
  if (last === from) return Buffer.alloc(0);
  const text = lines.source.slice(lines.start(from), lines.end(last - 1)).replace(/\r\n/g, '\n');
  return Buffer.from(`${text}\n`, 'latin1');
}

function decodeQuotedPrintable(text: string): Buffer {
  const joined = text.replace(/=\r?\n/g, '');
  // Written in place: a list of numbers takes 40 times the bytes it stands for.
  const bytes = Buffer.alloc(joined.length);
  let n = 0;
  for (let i = 0; i < joined.length; i++) {
    const c = joined[i]!;
    if (c === '=' && /^[0-9A-Fa-f]{2}$/.test(joined.slice(i + 1, i + 3))) {
      bytes[n++] = parseInt(joined.slice(i + 1, i + 3), 16);
      i += 2;
    } else bytes[n++] = joined.charCodeAt(i) & 0xff;
  }
  return bytes.subarray(0, n);
}
