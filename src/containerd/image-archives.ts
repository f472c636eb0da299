// Image archives for spec.kubernetes.install.images, read without containerd: which images an
// archive names (as `ctr images import` will name them) and what `ctr images ls` prints. Pure: the
// archive's bytes come in as blocks, the command output as text.

/** The containerd namespace the CRI plugin (and so the kubelet) uses. */
export const CRI_NAMESPACE = 'k8s.io';
/** containerd's socket on a Linux machine (kubeadm's criSocket, unix:///var/run/containerd/containerd.sock, names the same file). */
export const CONTAINERD_SOCKET = '/run/containerd/containerd.sock';

/** The members that name the images: OCI layout's index.json, docker-archive's manifest.json. */
export const NAMING_MEMBERS = ['index.json', 'manifest.json'] as const;
/** A naming member larger than this is not one (a JSON index of a few hundred images is well below it). */
export const NAMING_MEMBER_MAX_BYTES = 4 * 1024 * 1024;

const BLOCK = 512;

export type TarProblem = { problem: string };

/**
 * The top-level members `wanted` of a tar stream, by name ("./index.json" counts as "index.json").
 * Reads ustar, pax and GNU long names; the data of other members is skipped as it streams by. A
 * stream that is not a tar (compressed, truncated, a bad header checksum) is a problem, not a throw.
 */
export async function readTarMembers(blocks: AsyncIterable<Uint8Array>, wanted: readonly string[], maxBytes = NAMING_MEMBER_MAX_BYTES): Promise<Map<string, Buffer> | TarProblem> {
  const iterator = blocks[Symbol.asyncIterator]();
  try {
    return await readMembers(new ByteReader(iterator), wanted, maxBytes);
  } finally {
    // Stopping early must still close what the blocks come from (a file handle).
    await iterator.return?.();
  }
}

async function readMembers(reader: ByteReader, wanted: readonly string[], maxBytes: number): Promise<Map<string, Buffer> | TarProblem> {
  const found = new Map<string, Buffer>();
  let longName: string | undefined;
  // A pax header's size stands for the next member's: a member of 8 GiB or more (a large image
  // layer, as Go's archive/tar and Python write it) has 0 in its own header's size field.
  let paxSize: number | undefined;
  let zeroBlocks = 0;
  for (;;) {
    const header = await reader.take(BLOCK);
    if (header === undefined) return zeroBlocks > 0 || found.size > 0 ? found : { problem: 'it ends before its first member (an empty or truncated file)' };
    if (header.every((b) => b === 0)) {
      // Two zero blocks end an archive; tar itself stops at the first.
      if (++zeroBlocks === 2) return found;
      continue;
    }
    if (!checksumMatches(header)) return { problem: header[0] === 0x1f && header[1] === 0x8b ? 'it is gzip-compressed, not a tar' : 'it is not a tar archive (a header checksum does not match)' };
    const type = String.fromCharCode(header[156]!);
    const metadata = type === 'x' || type === 'L';
    const size = metadata ? sizeOf(header) : (paxSize ?? sizeOf(header));
    if (size === undefined) return { problem: 'it is not a tar archive (a member size is not a number)' };
    const padded = Math.ceil(size / BLOCK) * BLOCK;
    // Metadata members carry the next member's name (and, in pax, its size).
    if (metadata) {
      if (size > maxBytes) return { problem: 'it has a member header larger than any tar writer makes' };
      const data = await reader.take(padded);
      if (data === undefined) return { problem: 'it ends inside a member (a truncated file)' };
      if (type === 'L') {
        longName = data.subarray(0, size).toString('utf8').replace(/\0.*$/s, '');
        continue;
      }
      const records = paxRecords(data.subarray(0, size));
      longName = records.get('path') ?? longName;
      const paxSizeText = records.get('size');
      if (paxSizeText !== undefined && !/^\d+$/.test(paxSizeText)) return { problem: 'it is not a tar archive (a member size is not a number)' };
      if (paxSizeText !== undefined) paxSize = Number(paxSizeText);
      continue;
    }
    const name = topLevel(longName ?? nameOf(header));
    longName = undefined;
    paxSize = undefined;
    const keep = (type === '0' || type === '\0') && name !== undefined && wanted.includes(name);
    if (keep && size > maxBytes) return { problem: `its ${name} is ${size} bytes, more than the ${maxBytes} an image index takes` };
    if (keep) {
      const data = await reader.take(padded);
      if (data === undefined) return { problem: 'it ends inside a member (a truncated file)' };
      found.set(name, Buffer.from(data.subarray(0, size)));
    } else if (!(await reader.skip(padded))) {
      return { problem: 'it ends inside a member (a truncated file)' };
    }
    zeroBlocks = 0;
  }
}

/**
 * The image references an archive's naming members give, as `ctr images import` names the images
 * (containerd's archive importer): OCI index.json by io.containerd.image.name, else by a full
 * org.opencontainers.image.ref.name; docker-archive manifest.json by RepoTags, normalized. A name
 * the CRI would never ask for (no domain, no tag: "hello:1.0" instead of
 * docker.io/library/hello:1.0) or an image without a name is a problem: the import would succeed
 * and the kubelet would still pull.
 */
export function imageRefsOf(members: ReadonlyMap<string, Buffer>): { refs: string[] } | TarProblem {
  const index = members.get('index.json');
  const manifest = members.get('manifest.json');
  if (index === undefined && manifest === undefined) return { problem: 'it holds neither index.json (an OCI layout) nor manifest.json (a docker archive)' };
  const refs: string[] = [];
  if (index !== undefined) {
    const parsed = parseJson(index) as { manifests?: Array<{ annotations?: Record<string, unknown> }> } | undefined;
    if (!parsed || !Array.isArray(parsed.manifests)) return { problem: 'its index.json is not an OCI image index' };
    for (const entry of parsed.manifests) {
      const annotations = entry?.annotations ?? {};
      const name = annotations['io.containerd.image.name'] ?? annotations['org.opencontainers.image.ref.name'];
      // A tag alone ("1.0") is imported under a dated made-up name (import-2026-01-01:1.0).
      if (typeof name !== 'string' || !/[/:@]/.test(name)) {
        if (manifest === undefined) return { problem: `its index.json has an image ${typeof name === 'string' ? `named only by the tag "${name}"` : 'without a name'}` };
        continue;
      }
      refs.push(name);
    }
  }
  // A docker save of Docker 25+ writes both; the names agree, and the index's come first.
  if (refs.length === 0 && manifest !== undefined) {
    const parsed = parseJson(manifest) as Array<{ RepoTags?: unknown }> | undefined;
    if (!Array.isArray(parsed)) return { problem: 'its manifest.json is not a docker-archive manifest' };
    for (const entry of parsed) {
      const tags = Array.isArray(entry?.RepoTags) ? entry.RepoTags.filter((t): t is string => typeof t === 'string') : [];
      if (tags.length === 0) return { problem: 'its manifest.json has an image without RepoTags' };
      refs.push(...tags.map(normalizeImageRef));
    }
  }
  if (refs.length === 0) return { problem: 'it names no image' };
  const unfindable = refs.filter((r) => normalizeImageRef(r) !== r);
  if (unfindable.length) return { problem: `it names ${unfindable.map((r) => `"${r}"`).join(', ')}, which the kubelet asks for as ${unfindable.map(normalizeImageRef).join(', ')}` };
  return { refs: [...new Set(refs)] };
}

/**
 * A reference as the CRI (and the docker-archive importer) spells it: a domain (docker.io when the
 * first part is not a host), library/ for a docker.io name of one part, and :latest when there is
 * neither a tag nor a digest. As distribution's ParseDockerRef, without its validation.
 */
export function normalizeImageRef(ref: string): string {
  const slash = ref.indexOf('/');
  const first = slash === -1 ? '' : ref.slice(0, slash);
  const hasDomain = slash !== -1 && (first.includes('.') || first.includes(':') || first === 'localhost' || first !== first.toLowerCase());
  let domain = hasDomain ? first : 'docker.io';
  let rest = hasDomain ? ref.slice(slash + 1) : ref;
  if (domain === 'index.docker.io') domain = 'docker.io';
  if (domain === 'docker.io' && !rest.split('@')[0]!.includes('/')) rest = `library/${rest}`;
  const at = rest.indexOf('@');
  // With a digest the tag says nothing more (ParseDockerRef drops it).
  if (at !== -1) return `${domain}/${rest.slice(0, at).replace(/:[^/]*$/, '')}${rest.slice(at)}`;
  return `${domain}/${/:[^/]*$/.test(rest) ? rest : `${rest}:latest`}`;
}

/** The references `ctr images ls -q` prints, one a line. */
export function parseImageList(stdout: string): string[] {
  return stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

/**
 * The references and target digests of `ctr images ls` (REF TYPE DIGEST SIZE PLATFORMS LABELS;
 * only the first three columns are read: SIZE holds a space).
 */
export function parseImageTable(stdout: string): Array<{ ref: string; digest: string }> {
  return stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((cols) => cols.length >= 3 && cols[0] !== 'REF' && /^sha256:[0-9a-f]{64}$/.test(cols[2]!))
    .map((cols) => ({ ref: cols[0]!, digest: cols[2]! }));
}

/**
 * The platforms of each reference in `ctr images ls` (its PLATFORMS column, after the two words
 * of SIZE: "linux/amd64,linux/arm64/v8"); none when ctr could not tell ("-").
 */
export function platformsByRef(stdout: string): Map<string, string[]> {
  const platforms = new Map<string, string[]>();
  for (const cols of stdout.split('\n').map((l) => l.trim().split(/\s+/))) {
    if (cols.length < 6 || cols[0] === 'REF' || !/^sha256:[0-9a-f]{64}$/.test(cols[2]!)) continue;
    platforms.set(cols[0]!, cols[5] === '-' ? [] : cols[5]!.split(','));
  }
  return platforms;
}

/** Whether an image of these platforms runs on `machine` ("linux/arm64" runs "linux/arm64/v8"); unknown platforms are given the benefit of the doubt. */
export function runsOn(platforms: readonly string[], machine: string): boolean {
  return platforms.length === 0 || platforms.some((p) => p === machine || p.startsWith(`${machine}/`));
}

/**
 * The CRI plugin gives every image a second reference, its image id (sha256:<config digest>),
 * and keeps it when the names are removed with ctr; it goes when no name points at that image.
 */
export function isImageIdRef(ref: string): boolean {
  return /^sha256:[0-9a-f]{64}$/.test(ref);
}

/**
 * From `ctr content ls` (DIGEST SIZE AGE LABELS, tab-separated): the config digests each blob
 * leads to. containerd labels a manifest with its config (gc.ref.content.config) and an index with
 * its manifests (gc.ref.content.m.N), so an image's target digest resolves to its configs, which
 * are the CRI's image ids, without reading any blob.
 */
export function configsByTarget(stdout: string): (target: string) => string[] {
  const labels = new Map<string, { config?: string; children: string[] }>();
  for (const line of stdout.split('\n')) {
    const cols = line.split('\t').filter((c) => c !== '');
    const digest = cols[0];
    if (digest === undefined || !/^sha256:[0-9a-f]{64}$/.test(digest)) continue;
    const entry: { config?: string; children: string[] } = { children: [] };
    for (const label of (cols.at(-1) ?? '').split(',')) {
      const [key, value] = label.split('=', 2);
      if (key === 'containerd.io/gc.ref.content.config' && value) entry.config = value;
      else if (key !== undefined && /^containerd\.io\/gc\.ref\.content\.m\.\d+$/.test(key) && value) entry.children.push(value);
    }
    labels.set(digest, entry);
  }
  const resolve = (target: string, depth: number): string[] => {
    const entry = labels.get(target);
    if (!entry || depth > 4) return [];
    return entry.config ? [entry.config] : entry.children.flatMap((c) => resolve(c, depth + 1));
  };
  return (target) => resolve(target, 0);
}

function parseJson(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** A member name at the top of the archive, without "./"; undefined for anything deeper. */
function topLevel(name: string): string | undefined {
  const clean = name.replace(/^(\.\/)+/, '').replace(/^\/+/, '');
  return clean.includes('/') ? undefined : clean;
}

function field(header: Uint8Array, start: number, length: number): string {
  const bytes = header.subarray(start, start + length);
  const end = bytes.indexOf(0);
  return Buffer.from(end === -1 ? bytes : bytes.subarray(0, end)).toString('utf8');
}

function nameOf(header: Uint8Array): string {
  const name = field(header, 0, 100);
  // ustar keeps a long path's directories in a prefix field; GNU's magic ("ustar " and a space)
  // says that place holds access and change times instead.
  const prefix = field(header, 257, 6) === 'ustar' ? field(header, 345, 155) : '';
  return prefix ? `${prefix}/${name}` : name;
}

function sizeOf(header: Uint8Array): number | undefined {
  // GNU base-256 for members of 8 GiB and more: the high bit of the first byte is set.
  if ((header[124]! & 0x80) !== 0) {
    let size = 0;
    for (let i = 125; i < 136; i++) size = size * 256 + header[i]!;
    return size;
  }
  const text = field(header, 124, 12).trim();
  return /^[0-7]+$/.test(text) ? parseInt(text, 8) : text === '' ? 0 : undefined;
}

function checksumMatches(header: Uint8Array): boolean {
  const stored = field(header, 148, 8).trim();
  if (!/^[0-7]+$/.test(stored)) return false;
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : header[i]!;
  return sum === parseInt(stored, 8);
}

/** A pax header's records, "<length> <key>=<value>\n" each, where the length counts the record's bytes (a value may hold a line break). */
function paxRecords(data: Buffer): Map<string, string> {
  const records = new Map<string, string>();
  for (let at = 0; at < data.length; ) {
    const space = data.indexOf(0x20, at);
    const length = space === -1 ? NaN : Number(data.subarray(at, space).toString('latin1'));
    if (!Number.isInteger(length) || at + length > data.length || length <= space - at + 1) break;
    const record = data.subarray(space + 1, at + length - 1).toString('utf8');
    const equals = record.indexOf('=');
    if (equals > 0) records.set(record.slice(0, equals), record.slice(equals + 1));
    at += length;
  }
  return records;
}

/** Exact-size reads from a stream of blocks of any size (the blocks may be reused once the next is asked for). */
class ByteReader {
  private chunk: Uint8Array = new Uint8Array(0);
  private offset = 0;
  private readonly source: AsyncIterator<Uint8Array>;
  constructor(source: AsyncIterator<Uint8Array>) {
    this.source = source;
  }

  private async more(): Promise<boolean> {
    for (;;) {
      const next = await this.source.next();
      if (next.done) return false;
      if (next.value.length === 0) continue;
      this.chunk = next.value;
      this.offset = 0;
      return true;
    }
  }

  /** The next `n` bytes (copied), or undefined when the stream ends first. */
  async take(n: number): Promise<Buffer | undefined> {
    const out = Buffer.alloc(n);
    let filled = 0;
    while (filled < n) {
      if (this.offset === this.chunk.length && !(await this.more())) return undefined;
      const count = Math.min(n - filled, this.chunk.length - this.offset);
      out.set(this.chunk.subarray(this.offset, this.offset + count), filled);
      filled += count;
      this.offset += count;
    }
    return out;
  }

  /** Skips `n` bytes; false when the stream ends first. */
  async skip(n: number): Promise<boolean> {
    let left = n;
    while (left > 0) {
      if (this.offset === this.chunk.length && !(await this.more())) return false;
      const count = Math.min(left, this.chunk.length - this.offset);
      this.offset += count;
      left -= count;
    }
    return true;
  }
}
