// spec.kernelModules, spec.sysctls, spec.files: the host preparation inputs.
import { array, boolean, either, enumOf, object, optional, record, scalarString, string, withDefault, type ParseContext, type StringOptions } from './dsl.ts';
import { secretReference, type SecretReference } from './secret-field.ts';
import { MAX_INLINE_CONTENT_BYTES, decodeContent, filePathProblem } from './file-content.ts';
import { BUDGETS, formatMiB } from '../budgets.ts';
import { sysctlKeyProblem } from './sysctl-key.ts';
import { sourceUrl } from './source.ts';
import { machineString } from './machine.ts';

export const kernelModuleName = string({
  pattern: /^[A-Za-z0-9_-]+$/,
  patternHint: 'a module name such as br_netfilter (letters, digits, "_" and "-")',
  maxLength: 64,
});

export const sysctlKeyOptions: StringOptions = {
  // "/" only inside a part, standing for a dot in a name: net.ipv4.conf.eth0/100.forwarding.
  pattern: /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_:@-]+(\/[A-Za-z0-9_:@-]+)*)+$/,
  patternHint: 'use dots, e.g. net.ipv4.ip_forward; a dot inside a name is written "/", as sysctl -a prints it: net.ipv4.conf.eth0/100.forwarding (no "..", spaces or empty parts)',
  maxLength: 256,
  check: (key) => {
    const problem = sysctlKeyProblem(key);
    return problem ? `"${key}" is not a sysctl name: ${problem}|use dots, e.g. net.ipv4.ip_forward; a dot inside a name is written "/": net.ipv4.conf.eth0/100.forwarding` : undefined;
  },
};

export const sysctlValue = scalarString({
  check: (v) => (/[\r\n\0]/.test(v) ? 'a sysctl value must be one line|remove the line break' : v.trim() === '' ? 'must not be empty' : undefined),
});

// filePathProblem as a pattern: absolute, no NUL, no ".." segment (split at "/" or "\\"), no "."
// segment, not ending in "/".
const FILE_PATH = /^(?![\s\S]*(?:^|[\\/])\.\.(?:[\\/]|$))(?![\s\S]*(?:^|\/)\.(?:\/|$))(?:\/|[A-Za-z]:\\)[^\u0000]*[^\u0000/]$/;

// What is left of BUDGETS.inlineContentBytes in one check of a whole configuration: the files are
// checked in order, each decoded content spending from it (a YAML alias each time it is used).
// -1 once a file went past it: the files after it are not decoded at all.
const inlineContentLeft = new WeakMap<ParseContext, number>();

export const fileMode = string({ pattern: /^0?[0-7]{3,4}$/, patternHint: 'an octal mode in quotes, e.g. "0644"' });

export const fileSpec = object(
  {
    path: string({ minLength: 1, description: 'absolute path of the file on the machine', example: '/etc/example.conf', check: filePathProblem, jsonPattern: FILE_PATH }),
    content: optional(
      either<string, { valueFrom: SecretReference }>(string({ description: 'the content, encoded as "encoding" says', example: 'key = value\n' }), secretReference as never, {
        description: 'the content, encoded as "encoding" says; or a secret, { valueFrom: ... } (a file, a variable, a cloud secret store, an age envelope), read when the step runs and never shown',
        example: 'key = value\n',
        pick: (value) => (typeof value === 'string' ? 'a' : 'b'),
      }),
    ),
    encoding: withDefault(enumOf(['plain', 'base64', 'gzip+base64'] as const, { description: 'how content is encoded: plain text, base64, or gzip then base64', example: 'base64' }), 'plain'),
    source: optional(
      object({
        url: sourceUrl({ description: 'where the file comes from', example: 'https://downloads.example/tools/big.bin' }),
        sha256: string({ pattern: /^[a-f0-9]{64}$/, patternHint: '64 lowercase hex digits (sha256sum prints them)', description: 'the sha256 of the file: it is put in place only when its bytes match', example: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' }),
        caFile: optional(string({ minLength: 1, description: 'path of a PEM CA bundle on the machine, trusted for this download in addition to the system CAs', example: '/etc/ssl/site-ca.pem', check: filePathProblem })),
      }),
      { description: 'download the file instead of giving its content (give exactly one of content or source)', example: { url: 'https://downloads.example/tools/big.bin', sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' } },
    ),
    mode: optional(fileMode, { description: 'permissions, an octal mode in quotes (default "0644", or "0600" for secret content)', example: '0600' }),
    owner: optional(string({ pattern: /^[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)?$/, patternHint: '"user:group", e.g. root:root', description: 'owner and group of the file, by name or number (applied when machineadm runs as root)', example: 'root:root' })),
    append: withDefault(
      boolean({ description: 'add the content at the end of the file (created when missing) instead of replacing it; nothing is added when the file already holds the content as whole lines (a commented-out line is not it), so a rerun does not add it twice', example: true }),
      false,
    ),
    values: optional(
      record(machineString(string({ check: (v) => (/[\r\n\0]/.test(v) ? 'must be one line, without NUL|remove the line break' : undefined) })), {
        key: { pattern: /^[A-Za-z_][A-Za-z0-9_]*$/, patternHint: 'a name: letters, digits and _, not starting with a digit, e.g. MACHINE_LOCAL_HOSTNAME' },
      }),
      {
        description: 'values put into plain inline content where it says ${NAME}, each a literal, { fromMachine: NAME } or { fromInstanceData: KEY } (this machine\'s value); any other ${...} stays as it is',
        example: { MACHINE_LOCAL_HOSTNAME: { fromMachine: 'localHostname' } },
      },
    ),
  },
  {
    check: (f, report, ctx) => {
      if ((f.content === undefined) === (f.source === undefined)) report([], 'give exactly one of content or source');
      const left = inlineContentLeft.get(ctx) ?? BUDGETS.inlineContentBytes;
      if (typeof f.content === 'string' && f.encoding !== undefined && left >= 0) {
        const decoded = decodeContent(f.content, f.encoding, Math.min(MAX_INLINE_CONTENT_BYTES, left));
        if (!('problem' in decoded)) inlineContentLeft.set(ctx, left - decoded.bytes.length);
        else if (decoded.tooLarge) {
          inlineContentLeft.set(ctx, -1);
          if (left >= MAX_INLINE_CONTENT_BYTES) report('content', ...(decoded.problem.split('|') as [string, string]));
          else report('content', `with this file, the inline contents of spec.files are more than ${formatMiB(BUDGETS.inlineContentBytes)} together, decoded (a YAML alias counts each time it is used)`, 'give large files as source: { url, sha256 }, which is checked and written as it downloads');
        } else {
          const [message = decoded.problem, hint = 'encode the content as "encoding" says (base64 -w0 FILE, or gzip -c FILE | base64 -w0)'] = decoded.problem.split('|');
          report('content', message, hint);
        }
      }
      if (f.source !== undefined && f.append === true) report('append', 'applies only to inline content', 'give the content to add inline, or download the whole file without append');
      if (typeof f.content === 'object' && f.append === true) report('append', 'applies only to content given inline, not to a secret', 'write the secret to a file of its own');
      if (f.values !== undefined) {
        if (typeof f.content !== 'string' || f.encoding !== 'plain') report('values', 'apply only to plain inline content', 'give the content inline with encoding: plain, or write the values into it');
        else for (const name of Object.keys(f.values)) if (!f.content.includes(`\${${name}}`)) report(['values', name], `is not used: the content never says \${${name}}`, `write \${${name}} where the value goes, or remove ${name}`);
      }
      if (f.source !== undefined && f.encoding !== 'plain') report('encoding', 'applies only to inline content', 'leave it out for a downloaded file: its bytes are checked against sha256 as they are');
    },
  },
);

/** The mode a file is written with: the one given, else 0600 for secret content and 0644 for the rest. */
export function fileModeOf(spec: { mode?: string | undefined; content?: unknown }): number {
  return parseInt(spec.mode ?? (isSecretContent(spec) ? '0600' : '0644'), 8);
}

/** Whether a file's content is a secret reference (read when the step runs, never shown). */
export function isSecretContent(spec: { content?: unknown }): spec is { content: { valueFrom: SecretReference } } {
  return typeof spec.content === 'object' && spec.content !== null;
}

export const systemFields = {
  kernelModules: optional(array(kernelModuleName, { unique: true, description: 'kernel modules to load now and at every boot', example: ['overlay', 'br_netfilter'] })),
  rebootWhenRequired: optional(
    boolean({ description: 'reboot at the end of prepare when the OS says a reboot is pending (/run/reboot-required, as Debian and Ubuntu packages such as a new kernel write it); machineadm resumes after it', example: true }),
  ),
  sysctls: optional(record(sysctlValue, { key: sysctlKeyOptions, description: 'kernel parameters, applied now and at every boot', example: { 'net.ipv4.ip_forward': '1' } })),
  files: optional(
    array(fileSpec, {
      description: 'files to write',
      example: [{ path: '/etc/example.conf', content: 'key = value\n', mode: '0644' }],
    }),
  ),
};
