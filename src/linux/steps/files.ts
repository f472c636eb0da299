// prepare/files: the files listed in spec.files, from inline content or a verified download.
// Every target is checked (paths, links planted at the target, decoding) before the first write.
import { createHash } from 'node:crypto';
import type { Change, Step, StepContext } from '../../engine/step.ts';
import type { FileSpec } from '../../config/schema/index.ts';
import { fileModeOf, isSecretContent } from '../../config/schema/system.ts';
import { ConfigError, MachineadmError, ExitCode, type ConfigIssue } from '../../errors.ts';
import { displayUrl } from '../../redaction.ts';
import { isLocalSource } from '../../config/schema/source.ts';
import { checkLocalSource } from '../../bundle/local-source.ts';
import { decodeContent } from '../../config/schema/file-content.ts';
import { fillValues, type MachineString } from '../../config/schema/machine.ts';
import { errorForField, formatMode, inspectFile, inspectTarget, writeFiles, type DesiredFile } from '../../engine/managed-file.ts';
import { readPem } from '../../config/pem-file.ts';
import { secretNeedsNetwork } from '../../config/secrets.ts';
import { describeSecretSource } from '../../config/secret-description.ts';
import { downloadAll, EarlyDownloads, sourceFiles, type SourceFile } from './file-downloads.ts';

/** The users prepare/users makes, and their groups: the primary one (a group named after the user when none is given) and the others. */
function madeByUsers(ctx: StepContext): { users: Set<string>; groups: Set<string> } {
  const users = ctx.config.spec.users ?? [];
  return { users: new Set(users.map((u) => u.name)), groups: new Set(users.flatMap((u) => [u.primaryGroup ?? u.name, ...(u.groups ?? [])])) };
}

/** "user:group" as resolveOwner reads it: a user alone has the group of the same name. */
function ownerParts(owner: string): { user: string; group: string } {
  const [user = '', group = user] = owner.split(':');
  return { user, group };
}

// An owner that prepare/users makes (a user of spec.users, or one of their groups) may not exist
// when a plan looks at the machine; the run makes it before this step.
function ownerMadeByUsers(ctx: StepContext, owner: string): boolean {
  const made = madeByUsers(ctx);
  const { user, group } = ownerParts(owner);
  return made.users.has(user) || made.groups.has(group);
}

/** A file no one but its owner (and group) may read is treated as a secret: its content never shows in a diff. */
function isPrivate(mode: number): boolean {
  return (mode & 0o004) === 0;
}

// Two entries for one path would overwrite each other on every run, so the step never converges;
// an entry inside another's path would need that file to be a folder, and fails half-way.
function duplicatePaths(files: readonly FileSpec[], separator: string): ConfigIssue[] {
  const first = new Map<string, number>();
  const issues: ConfigIssue[] = [];
  for (const [index, spec] of files.entries()) {
    const earlier = first.get(spec.path);
    if (earlier === undefined) first.set(spec.path, index);
    else issues.push({ path: `spec.files[${index}].path`, message: `"${spec.path}" is also spec.files[${earlier}].path`, hint: 'give each file once' });
  }
  for (const [index, spec] of files.entries()) {
    const parts = spec.path.split(separator);
    for (let n = parts.length - 1; n > 1; n--) {
      const file = first.get(parts.slice(0, n).join(separator));
      if (file !== undefined) issues.push({ path: `spec.files[${index}].path`, message: `"${spec.path}" is inside "${files[file]!.path}", which spec.files[${file}] writes as a file`, hint: 'a file cannot also be a folder: change one of the paths' });
    }
  }
  return issues;
}

/**
 * What an appending entry leaves in the file: the file as it is when it holds the content already
 * (so a rerun adds nothing), else the file with the content added on a line of its own.
 */
export function appended(current: Buffer | undefined, content: Buffer): Buffer {
  if (current === undefined || current.length === 0) return content;
  if (content.length === 0 || holdsAsLines(current, content)) return current;
  return Buffer.concat([current, ...(current[current.length - 1] === 0x0a ? [] : [Buffer.from('\n')]), content]);
}

/**
 * Whether the file holds the content as an append leaves it: from the start of a line to the end
 * of one (or of the file). Only there: within a line it is other text, such as the comment
 * "#net.ipv4.ip_forward=1" of a stock sysctl.conf around "net.ipv4.ip_forward=1".
 */
function holdsAsLines(current: Buffer, content: Buffer): boolean {
  const endsLine = content[content.length - 1] === 0x0a;
  for (let at = current.indexOf(content); at !== -1; at = current.indexOf(content, at + 1)) {
    const end = at + content.length;
    if ((at === 0 || current[at - 1] === 0x0a) && (endsLine || end === current.length || current[end] === 0x0a)) return true;
  }
  return false;
}

/** Plain content with each ${NAME} of `values` replaced by its value (resolved before any step runs). */
function withValues(content: Buffer, values: Record<string, MachineString>, index: number): Buffer {
  return Buffer.from(fillValues(content.toString('utf8'), values, `spec.files[${index}].values`), 'utf8');
}

// Inline content decoded once per configuration: preflight, check and apply each look at every
// file, and each decode of up to 16 MiB lingers until the garbage collector runs.
const decodedInline = new WeakMap<FileSpec, ReturnType<typeof decodeContent>>();

function decodeInline(spec: FileSpec, content: string): ReturnType<typeof decodeContent> {
  const known = decodedInline.get(spec);
  if (known) return known;
  const decoded = decodeContent(content, spec.encoding);
  decodedInline.set(spec, decoded);
  return decoded;
}

/** A file whose content is in a store the --offline run cannot reach: planned, never read. */
interface UnreadFile {
  path: string;
  detail: string;
}

// `unread`: the check of an --offline run plans such a file without reading its secret (the run
// refuses it before any step, once); the preflight and apply read it, and refuse it themselves.
async function split(ctx: StepContext, options: { unread?: UnreadFile[] } = {}): Promise<{ inline: DesiredFile[]; sources: SourceFile[] }> {
  const inline: DesiredFile[] = [];
  const sources: SourceFile[] = [];
  const duplicates = duplicatePaths(ctx.config.spec.files ?? [], ctx.host.fs.platform === 'windows' ? '\\' : '/');
  if (duplicates.length) throw new ConfigError(duplicates);
  for (const [index, spec] of (ctx.config.spec.files ?? []).entries()) {
    const mode = fileModeOf(spec);
    if (spec.source) {
      sources.push({ index, spec: spec as SourceFile['spec'], mode });
      continue;
    }
    // A secret is read when the step looks at its file (a plan for another machine reads none).
    const secret = isSecretContent(spec);
    if (secret && options.unread && ctx.host.offline && secretNeedsNetwork(spec.content)) {
      options.unread.push({ path: spec.path, detail: `content from ${describeSecretSource(spec.content, ctx.facts.os)}, not read with --offline` });
      continue;
    }
    const text = typeof spec.content === 'string' ? spec.content : spec.content === undefined || otherMachine(ctx) ? '' : await ctx.secret(spec.content, `spec.files[${index}].content`, { exact: true, encoding: spec.encoding });
    const decoded = typeof spec.content === 'string' ? decodeInline(spec, spec.content) : decodeContent(text, spec.encoding);
    if ('problem' in decoded) throw new MachineadmError(`spec.files[${index}].content ${secret ? `(the secret read) ${decoded.problem.split('|')[0]}` : decoded.problem}`, ExitCode.usage);
    // A target the step must not write (a link, a directory) is refused by inspectFile below.
    let current: Buffer | undefined;
    try {
      current = spec.append && !otherMachine(ctx) && (await ctx.host.fs.stat(spec.path))?.kind === 'file' ? await ctx.host.fs.readFile(spec.path) : undefined;
    } catch (error) {
      throw errorForField(`spec.files[${index}].path`, error);
    }
    const filled = spec.values && Object.keys(spec.values).length > 0 ? withValues(decoded.bytes, spec.values, index) : decoded.bytes;
    const content = spec.append ? appended(current, filled) : filled;
    inline.push({ path: spec.path, content, mode, ...(spec.owner ? { owner: spec.owner, ...(ownerMadeByUsers(ctx, spec.owner) ? { ownerMadeLater: true } : {}) } : {}), field: `spec.files[${index}].path`, sensitive: secret || isPrivate(mode) });
  }
  return { inline, sources };
}

async function inspectSource(ctx: StepContext, file: SourceFile): Promise<Change | undefined> {
  const field = `spec.files[${file.index}].path`;
  try {
    const info = await inspectTarget(ctx.host.fs, file.spec.path);
    const detail = `from ${displayUrl(file.spec.source.url)} (sha256 ${file.spec.source.sha256.slice(0, 12)}...), mode ${formatMode(file.mode)}`;
    if (!info) return { action: 'download', target: file.spec.path, detail };
    // Hashed block by block: a node's downloads are often large, and are checked at every run.
    const hash = createHash('sha256');
    for await (const block of ctx.host.fs.readBlocks(file.spec.path)) hash.update(block);
    const sha = hash.digest('hex');
    if (sha !== file.spec.source.sha256) return { action: 'download', target: file.spec.path, detail: `${detail}; the file on disk has sha256 ${sha.slice(0, 12)}...` };
    const details: string[] = [];
    if (ctx.facts.os !== 'windows' && info.mode !== file.mode) details.push(`mode ${formatMode(info.mode)} -> ${formatMode(file.mode)}`);
    if (file.spec.owner && ctx.facts.privileged) {
      const owner = await ctx.host.fs.resolveOwner(file.spec.owner);
      if (owner.uid !== info.uid || owner.gid !== info.gid) details.push(`owner ${info.uid}:${info.gid} -> ${file.spec.owner}`);
    }
    return details.length ? { action: 'chmod', target: file.spec.path, detail: details.join(', ') } : undefined;
  } catch (error) {
    throw errorForField(field, error);
  }
}

// A file: source (resolved from a relative one when the configuration was loaded) is copied from
// this machine and checked like a download, with no network.
function isLocal(file: SourceFile): boolean {
  return isLocalSource(file.spec.source.url);
}

const WINDOWS_PATH = /^[A-Za-z]:\\/;

// A path, owner or mode that cannot mean anything on this machine's system is refused, not dropped.
function platformIssues(ctx: StepContext): ConfigIssue[] {
  const windows = ctx.facts.os === 'windows';
  const issues: ConfigIssue[] = [];
  for (const [index, spec] of (ctx.config.spec.files ?? []).entries()) {
    const at = `spec.files[${index}]`;
    if (WINDOWS_PATH.test(spec.path) !== windows) {
      issues.push({ path: `${at}.path`, message: windows ? `"${spec.path}" is not a Windows path and this is a Windows machine` : `"${spec.path}" is a Windows path and this is a Linux machine`, hint: windows ? 'give the path with its drive, e.g. C:\\k\\config.json' : "give the Linux path, or keep the file in a Windows machine's configuration" });
    }
    if (windows && spec.owner !== undefined) issues.push({ path: `${at}.owner`, message: 'is a Linux user and group; a Windows file takes the ACL of its directory', hint: 'remove it for Windows machines' });
    if (windows && spec.mode !== undefined && (parseInt(spec.mode, 8) & 0o004) === 0) {
      issues.push({ path: `${at}.mode`, message: `${spec.mode} keeps the file from other users on Linux; Windows has no such mode and the file would take its directory's ACL`, hint: 'write secrets on Windows through valueFrom references, or into a directory locked to SYSTEM and Administrators beforehand' });
    }
  }
  return issues;
}

/** Planned for another operating system (plan --os): that machine's files cannot be looked at from here. */
function otherMachine(ctx: StepContext): boolean {
  return ctx.host.fs.platform !== ctx.facts.os;
}

export const filesStep: Step = {
  id: 'files',
  summary: 'write the files listed in spec.files',
  applies: (config) => (config.spec.files?.length ?? 0) > 0,
  // An appended file is shared by design (a line added to a file the image has): not whole.
  writes: (config) => (config.spec.files ?? []).filter((f) => !f.append).map((f) => f.path),
  // A target the step would refuse (a planted link, a directory, content that does not decode) is
  // found before any step of the run writes anything.
  async preflight(ctx) {
    const { inline, sources } = await split(ctx);
    const issues: ConfigIssue[] = platformIssues(ctx);
    if (otherMachine(ctx)) {
      if (issues.length) throw new ConfigError(issues);
      return;
    }
    // A download's CA bundle must be on the machine, unless an inline file writes it first.
    const writtenInline = new Set(inline.map((f) => f.path));
    for (const s of sources) {
      const caFile = s.spec.source.caFile;
      if (caFile && !writtenInline.has(caFile)) await readPem(ctx.host, caFile, `spec.files[${s.index}].source.caFile`, 'certificate', issues);
    }
    // An owner the machine does not have (and prepare/users does not make) is refused now, not
    // after earlier steps changed the machine. Owners apply only when machineadm runs as root.
    if (ctx.facts.privileged) {
      const made = madeByUsers(ctx);
      for (const [index, spec] of (ctx.config.spec.files ?? []).entries()) {
        if (!spec.owner) continue;
        // Each part prepare/users makes is there by this step's turn; the other must be there now,
        // or the run would fail here after prepare/users changed the machine.
        const { user, group } = ownerParts(spec.owner);
        const unmade = `${made.users.has(user) ? 'root' : user}:${made.groups.has(group) ? 'root' : group}`;
        await ctx.host.fs.resolveOwner(unmade).catch((error: unknown) => {
          const message = (error instanceof Error ? error.message : String(error)).replace(`owner "${unmade}"`, `owner "${spec.owner}"`);
          issues.push({ path: `spec.files[${index}].owner`, message, hint: 'create the user and group first (spec.users), or give numeric ids such as 1000:1000' });
        });
      }
    }
    if (issues.length) throw new ConfigError(issues);
    const targets = [...inline.map((f) => ({ path: f.path, field: f.field })), ...sources.map((s) => ({ path: s.spec.path, field: `spec.files[${s.index}].path` }))];
    for (const target of targets) {
      try {
        await inspectTarget(ctx.host.fs, target.path);
      } catch (error) {
        throw errorForField(target.field, error);
      }
    }
    for (const file of sources.filter(isLocal)) await checkLocalSource(ctx.host, file.spec.source, `spec.files[${file.index}].source`);
  },
  async check(ctx) {
    const unread: UnreadFile[] = [];
    const { inline, sources } = await split(ctx, { unread });
    if (otherMachine(ctx)) {
      const planned = [...inline.map((f) => f.path), ...sources.map((s) => s.spec.path)].map((target) => ({ action: 'write', target, detail: `planned for a ${ctx.facts.os} machine: its current content is not looked at from here` }));
      return { done: false, changes: planned };
    }
    const changes: Change[] = unread.map((f) => ({ action: 'write', target: f.path, detail: f.detail }));
    for (const f of inline) {
      const state = await inspectFile(ctx.host.fs, f, ctx.facts.privileged);
      if (state.change) changes.push(state.change);
    }
    const network: string[] = [];
    for (const s of sources) {
      const change = await inspectSource(ctx, s);
      if (change) changes.push(change);
      if (change?.action === 'download' && !isLocal(s)) network.push(`download ${displayUrl(s.spec.source.url)} for spec.files[${s.index}]`);
    }
    return { done: changes.length === 0, changes, ...(network.length ? { network } : {}) };
  },
  // The downloads whose target is not there yet begin when the run starts, into temporary files
  // beside their targets, while the steps before this one run (see src/linux/README.md); apply()
  // takes them as they are, or as they end. A target that is there is hashed by check() at this
  // step's turn, as before. Nothing appears at a target before this step's turn.
  begin(ctx) {
    if (otherMachine(ctx)) return undefined;
    const candidates = sourceFiles(ctx).filter((f) => !(ctx.host.offline && !isLocal(f)));
    if (candidates.length === 0) return undefined;
    return new EarlyDownloads(ctx, candidates, async (f) => (await ctx.host.fs.stat(f.spec.path)) === undefined);
  },
  async apply(ctx) {
    const { inline, sources } = await split(ctx);
    // Check every target first: a refused path must not leave the earlier files written.
    const pendingSources: { file: SourceFile; change: Change }[] = [];
    for (const s of sources) {
      const change = await inspectSource(ctx, s);
      if (change) pendingSources.push({ file: s, change });
    }
    for (const f of inline) await inspectFile(ctx.host.fs, f, ctx.facts.privileged);
    const needNetwork = pendingSources.filter((p) => p.change.action === 'download' && !isLocal(p.file));
    if (needNetwork.length && ctx.host.offline) {
      const first = needNetwork[0]!;
      throw new MachineadmError(`spec.files[${first.file.index}].source: ${displayUrl(first.file.spec.source.url)} cannot be downloaded with --offline`, ExitCode.usage, {
        hint: 'put the file in place beforehand (its sha256 is checked), or run without --offline',
      });
    }
    // Downloads first: they are what fails most (network, a wrong sha256), and a failure then
    // leaves the inline files unwritten too. All of them are downloaded and checked before the
    // first is put in place, so a failing one leaves every target as it was.
    await downloadAll(
      ctx,
      pendingSources.filter((p) => p.change.action === 'download').map((p) => p.file),
      ctx.early instanceof EarlyDownloads ? ctx.early : undefined,
    );
    for (const { file, change } of pendingSources) {
      if (change.action !== 'chmod') continue;
      try {
        await ctx.host.fs.setAttributes(file.spec.path, { mode: file.mode, ...(file.spec.owner && ctx.facts.privileged ? { owner: file.spec.owner } : {}) });
      } catch (error) {
        throw errorForField(`spec.files[${file.index}].source`, error);
      }
    }
    await writeFiles(ctx.host.fs, inline, ctx.facts.privileged);
  },
};
