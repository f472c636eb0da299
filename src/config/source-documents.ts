// A source's bytes as documents: plain YAML, gzip, base64, MIME multipart user data (the
// MachineConfig parts), each document with the line of every field.
import { ConfigError, type ConfigIssue } from '../errors.ts';
import { API_GROUP, SUPPORTED_API_VERSIONS } from './schema/index.ts';
import { DocumentError, decodeUtf8, parseDocument, type ParsedDocument } from './document.ts';
import { MACHINECONFIG_CONTENT_TYPE, MimeError, gunzipLimited, isGzip, isMultipart, machineConfigPart, mimeForCloudInit, singlePart, splitMultipart, unwrapBase64, type MimePart } from './mime.ts';
import type { RawSource } from './source-specs.ts';
import { SourceError, sourceIssues } from './source-reading.ts';
import type { LoadBudget } from './budgets.ts';

/** The MachineConfig documents among MIME parts: machineadm's parts parsed, a mistyped one refused. */
export function documentsOfParts(raw: RawSource, all: MimePart[], budget: LoadBudget): { documents: ParsedDocument[]; userData: boolean; warnings?: string[] } {
  const out: ParsedDocument[] = [];
  const issues: ConfigIssue[] = [];
  // A part that plainly means to be machineadm's but has another type would otherwise leave the
  // machine silently unconfigured ("nothing to do").
  for (const part of all.filter((p) => machineConfigPart(p.contentType) === 'mistyped')) {
    issues.push({ source: `${raw.name} (part ${part.index})`, path: '', message: `has Content-Type ${part.contentType}, which machineadm does not read`, hint: `use Content-Type: ${MACHINECONFIG_CONTENT_TYPE}` });
  }
  for (const part of all.filter((p) => machineConfigPart(p.contentType) === 'yes')) {
    const name = `${raw.name} (part ${part.index})`;
    try {
      const lineOffset = (part.firstLine ?? 1) - 1;
      const doc = parseDocument(stripBom(decodeUtf8(part.body, name, lineOffset)), name, lineOffset, budget);
      if (!doc) throw new DocumentError([{ source: name, path: '', message: `the ${MACHINECONFIG_CONTENT_TYPE} part is empty`, hint: 'put the MachineConfig in the part, or remove the part' }]);
      out.push(doc);
    } catch (error) {
      issues.push(...sourceIssues(error, name));
      // Past a total, the parts after it would each say so again.
      if (budget.exhausted) break;
    }
  }
  if (issues.length) throw new ConfigError(issues);
  const warnings = all
    .filter((p) => machineConfigPart(p.contentType) === 'yes' && p.readOtherwiseByCloudInit)
    .map((p) => `${raw.name} (part ${p.index}): no blank line after the part's headers; machineadm read the MachineConfig, but cloud-init reads its first line as a header and the part as empty (put a blank line after the headers)`);
  return { documents: out, userData: true, ...(warnings.length ? { warnings } : {}) };
}

export const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/**
 * The MachineConfig documents of MIME content (multipart, or one part with its headers); undefined
 * when the content is not MIME. Content may start with a UTF-8 byte order mark (3.2), MIME too;
 * cloud-init then reads the headers as text, which a warning says.
 */
export function mimeDocuments(raw: RawSource, content: Uint8Array, maxBytes: number, budget: LoadBudget): { documents: ParsedDocument[]; userData: boolean; warnings?: string[] } | undefined {
  const bom = UTF8_BOM.equals(content.subarray(0, 3));
  const bytes = bom ? content.subarray(3) : content;
  let found: { documents: ParsedDocument[]; userData: boolean; warnings?: string[] };
  const notes: string[] = [];
  if (isMultipart(bytes)) {
    found = documentsOfParts(raw, splitMultipart(bytes, maxBytes, budget), budget);
    if (found.documents.length > 0 && !mimeForCloudInit(bytes)) {
      notes.push(`${raw.name}: multipart user data without a MIME-Version header; machineadm read the MachineConfig, but cloud-init reads such user data as plain text and does not hand its parts to machineadm's part handler (put MIME-Version: 1.0 among the top headers)`);
    }
  } else {
    // One part with no multipart around it (headers, a blank line, the body): read as that part,
    // as cloud-init reads it, never as YAML with the headers in it.
    const single = singlePart(bytes, maxBytes, budget);
    if (!single) return undefined;
    found = documentsOfParts(raw, [single], budget);
    if (!mimeForCloudInit(bytes) && machineConfigPart(single.contentType) === 'yes') {
      notes.push(`${raw.name}: one MIME part without a MIME-Version header; machineadm read the MachineConfig, but cloud-init reads such user data as plain text and does not hand it to machineadm's part handler (put MIME-Version: 1.0 before Content-Type)`);
    }
  }
  if (bom && found.documents.length > 0) {
    notes.push(`${raw.name}: MIME user data that starts with a byte order mark; machineadm read the MachineConfig, but cloud-init reads such user data as plain text and does not hand its parts to machineadm's part handler (save it as UTF-8 without a byte order mark)`);
  }
  const warnings = [...(found.warnings ?? []), ...notes];
  return { ...found, ...(warnings.length ? { warnings } : {}) };
}

/** The MachineConfig documents a source holds (none for user data that does not opt in). */
export function extractDocuments(raw: RawSource, maxBytes: number, budget: LoadBudget): { documents: ParsedDocument[]; userData: boolean; warnings?: string[] } {
  let bytes = raw.bytes;
  // cloud-init accepts gzip-compressed user data; so does machineadm, from any source.
  if (isGzip(bytes)) bytes = gunzipSource(bytes, maxBytes, budget);
  const unwrapped = raw.userData ? unwrapBase64(bytes) : undefined;
  if (unwrapped) bytes = isGzip(unwrapped) ? gunzipSource(unwrapped, maxBytes, budget) : unwrapped;
  const mime = mimeDocuments(raw, bytes, maxBytes, budget);
  if (mime) return mime;
  if (raw.userData) {
    // Whole (non-multipart) user data: a MachineConfig is taken whole; a shell script or a
    // cloud-config is someone else's, unless it plainly means to be ours.
    if (bytes.length === 0) return { documents: [], userData: true };
    const text = stripBom(Buffer.from(bytes).toString('utf8'));
    // cloud-init's own formats start with a marker line; one that only mentions machineadm (a
    // cloud-config writing a MachineConfig file with write_files) is still cloud-init's. cloud-init
    // matches the marker in any case after leading blanks, and a jinja template (Cluster API's
    // user data) before its cloud-config or script.
    const cloudInit = /^(#!|#cloud-|#include|#part-handler|#upstart-job|## template: jinja)/i.test(text.trimStart());
    const ours = !cloudInit && (text.includes(API_GROUP) || /^\s*kind:\s*["']?MachineConfig\b/m.test(text));
    if (!ours) return { documents: [], userData: true };
    const doc = parseDocument(stripBom(decodeUtf8(bytes, raw.name)), raw.name, 0, budget);
    return { documents: doc ? [doc] : [], userData: true };
  }
  const doc = parseDocument(stripBom(decodeUtf8(bytes, raw.name)), raw.name, 0, budget);
  if (!doc) throw new DocumentError([{ source: raw.name, path: '', message: 'is empty', hint: `write a MachineConfig (apiVersion: ${SUPPORTED_API_VERSIONS[0]}, kind: MachineConfig, spec: ...)` }]);
  return { documents: [doc], userData: false };
}

// A whole source in gzip is not MIME: its problem is the source's, not a part's.
function gunzipSource(bytes: Uint8Array, maxBytes: number, budget: LoadBudget): Buffer {
  try {
    return gunzipLimited(bytes, maxBytes, budget, 'it');
  } catch (error) {
    if (error instanceof MimeError) throw new SourceError(error.message, error.hint);
    throw error;
  }
}

export function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}
