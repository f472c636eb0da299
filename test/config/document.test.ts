import { describe, expect, it } from 'vitest';
import { DocumentError, decodeUtf8, expandedSize, firstInvalidUtf8, parseDocument } from '../../src/config/document.ts';

function issuesOf(fn: () => unknown) {
  try {
    fn();
  } catch (error) {
    if (error instanceof DocumentError) return error.issues;
    throw error;
  }
  throw new Error('expected a DocumentError');
}

describe('positions of fields', () => {
  const yaml = [
    'apiVersion: x', //            1
    'spec:', //                    2
    '  containerd:', //            3
    '    registries:', //          4
    '      docker.io:', //         5
    '        mirrors:', //         6
    '          - url: a', //       7
    '          - { url: b }', //   8
    '  sysctls: {"net.x": 1}', //  9
  ].join('\n');

  it.each([
    ['a top-level key', ['apiVersion'], 1, 1],
    ['a nested key', ['spec', 'containerd', 'registries'], 4, 5],
    ['a key with a dot', ['spec', 'containerd', 'registries', 'docker.io'], 5, 7],
    ['a block list item', ['spec', 'containerd', 'registries', 'docker.io', 'mirrors', 0], 7, 13],
    ['a key inside a block list item', ['spec', 'containerd', 'registries', 'docker.io', 'mirrors', 0, 'url'], 7, 13],
    ['a flow map inside a list', ['spec', 'containerd', 'registries', 'docker.io', 'mirrors', 1, 'url'], 8, 15],
    ['a quoted key in a flow map (at its quote)', ['spec', 'sysctls', 'net.x'], 9, 13],
  ])('finds %s', (_name, path, line, column) => {
    const doc = parseDocument(yaml, 'f.yaml')!;
    expect(doc.positions.find(path)).toEqual({ line, column, exact: true });
  });

  it('falls back to the closest ancestor for a path the file does not have', () => {
    const doc = parseDocument(yaml, 'f.yaml')!;
    expect(doc.positions.find(['spec', 'containerd', 'sandboxImage'])).toEqual({ line: 3, column: 3, exact: false });
  });

  it('reads JSON with positions too', () => {
    const doc = parseDocument('{\n  "spec": {\n    "kernelModules": ["overlay", 5]\n  }\n}\n', 'f.json')!;
    expect(doc.value).toEqual({ spec: { kernelModules: ['overlay', 5] } });
    expect(doc.positions.find(['spec', 'kernelModules', 1])).toMatchObject({ line: 3, column: 34 });
  });

  it('shifts lines by the offset of a part inside a larger document', () => {
    const doc = parseDocument('a:\n  b: 1\n', 'part', 10)!;
    expect(doc.positions.find(['a', 'b'])).toMatchObject({ line: 12 });
  });

  it('keeps plain scalars that look like dates as strings', () => {
    expect(parseDocument('a: 2024-01-01\n', 'f')!.value).toEqual({ a: '2024-01-01' });
  });

  it('returns nothing for a document of only comments', () => {
    expect(parseDocument('# nothing here\n', 'f')).toBeUndefined();
  });

  it.each([
    ['a trailing ---', 'a: 1\n---\n'],
    ['a --- between the comments after it', 'a: 1\n---\n# the end\n---\n'],
    ['a leading and a trailing ---', '---\na: 1\n---\n'],
  ])('reads one document with %s (empty documents, as generators write them, are nothing)', (_what, text) => {
    expect(parseDocument(text, 'f')!.value).toEqual({ a: 1 });
  });
});

describe('bad input', () => {
  it.each([
    ['malformed YAML', 'a:\n  b: 1\n c: 2\n', /not valid YAML or JSON: bad indentation/, 3],
    ['an unterminated quote', 'a: "x\n', /not valid YAML or JSON/, undefined],
    ['malformed JSON', '{"a": 1,, }', /not valid YAML or JSON/, 1],
    ['a duplicate key', 'spec:\n  sysctls: {}\n  files: []\n  sysctls: {}\n', /key "sysctls" appears twice in the same map/, 4],
    ['several documents', 'a: 1\n---\nb: 2\n', /holds 2 YAML documents/, 2],
    ['several documents, an empty one between', 'a: 1\n---\n---\nb: 2\n', /holds 2 YAML documents/, 3],
    ['an HTML page', '\n<!DOCTYPE html>\n<html><body>Sign in</body></html>', /HTML page, not a configuration/, 1],
  ])('reports %s with its line', (_name, text, message, line) => {
    const issues = issuesOf(() => parseDocument(text, 'f.yaml'));
    expect(issues).toHaveLength(1);
    expect(issues[0]!.message).toMatch(message);
    expect(issues[0]!.source).toBe('f.yaml');
    if (line !== undefined) expect(issues[0]!.line).toBe(line);
  });

  it.each([
    ['JSON', '{"spec": {"sysctls": {"a.b": "1", "a.b": "2"}}}', '"a.b"', 1, 35],
    ['a double-quoted YAML key', 'spec:\n  sysctls:\n    a.b: "1"\n    "a.b": "2"\n', '"a.b"', 4, 5],
    ['a single-quoted YAML key', "spec:\n  sysctls:\n    a.b: '1'\n    'a.b': '2'\n", "'a.b'", 4, 5],
  ])('names a duplicate key written in quotes (%s) as written, at its opening quote', (_name, text, key, line, column) => {
    const [issue, ...rest] = issuesOf(() => parseDocument(text, 'f.yaml'));
    expect(rest).toEqual([]);
    expect(issue).toMatchObject({ message: `key ${key} appears twice in the same map`, line, column });
  });

  it('never quotes the source text in a YAML error (it could hold a secret)', () => {
    const issues = issuesOf(() => parseDocument('token: "s3cr3t-value\n  x: [\n', 'f.yaml'));
    expect(JSON.stringify(issues)).not.toContain('s3cr3t');
  });

  it('stops an alias bomb quickly with a clear error', () => {
    const levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let i = 1; i < 12; i++) {
      const prev = String.fromCharCode(96 + i);
      const name = String.fromCharCode(97 + i);
      levels.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(',')}]`);
    }
    const started = Date.now();
    const issues = issuesOf(() => parseDocument(levels.join('\n') + '\n', 'bomb.yaml'));
    expect(Date.now() - started).toBeLessThan(1000);
    expect(issues[0]!.message).toMatch(/aliases expand this document to more than 20000 values/);
  });

  it('refuses a document nested deeper than any configuration', () => {
    const issues = issuesOf(() => parseDocument('a: ' + '['.repeat(100) + ']'.repeat(100) + '\n', 'f'));
    expect(issues[0]!.message).toBe('nested too deeply');
  });

  it('refuses thousands of aliases even when they expand to little', () => {
    const text = 'a: &a x\nb: [' + Array(1500).fill('*a').join(',') + ']\n';
    expect(issuesOf(() => parseDocument(text, 'f'))[0]!.message).toMatch(/more than 1000 YAML aliases/);
  });

  it('counts expanded values without expanding them', () => {
    const leaf = [1, 2, 3];
    const mid = [leaf, leaf, leaf];
    expect(expandedSize({ a: mid, b: mid }, 1e9)).toBe(1 + 2 * (1 + 3 * 4));
  });

  it.each([
    ['a stray continuation byte', Buffer.from([0x61, 0x0a, 0x62, 0x80, 0x63]), 3, 2],
    ['a truncated sequence', Buffer.from([0x61, 0xe2, 0x82]), 1, 1],
    ['an overlong encoding', Buffer.from([0x0a, 0x0a, 0xc0, 0xaf]), 2, 3],
    ['Latin-1 text', Buffer.from('caf\xe9: 1\n', 'latin1'), 3, 1],
  ])('rejects invalid UTF-8 (%s) naming the byte and line', (_name, bytes, offset, line) => {
    expect(firstInvalidUtf8(bytes)).toBe(offset);
    const issues = issuesOf(() => decodeUtf8(bytes, 'f.yaml'));
    expect(issues[0]!.message).toMatch(new RegExp(`not valid UTF-8 \\(byte ${offset} `));
    expect(issues[0]!.line).toBe(line);
  });

  it('accepts valid multi-byte UTF-8', () => {
    expect(decodeUtf8(Buffer.from('name: "nœud-ü-日本-🚀"\n'), 'f')).toContain('🚀');
  });
});
