// machineadm's cloud-init part handler (docs/recipes/user-data/machineadm-part-handler.py) run by
// the real cloud-init 22.4: its init stage consumes the recipe's multipart user data, the handler
// claims the MachineConfig part, cloud-init logs no warning, and the file lands in a scratch
// root's /etc/machineadm/config.d/, where a plain `machineadm init` reads it.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';
import { RECIPES, cloudInitParts, consumeUserData, machineadm, run, warnings, writeScratch } from './readers.ts';

const skip = missingRequirement({ commands: ['cloud-init'] });
const dir = scratchDir('machineadm-part-handler-');
const PARTS = join(RECIPES, 'user-data');
const machineConfig = readFileSync(join(PARTS, 'machineconfig.yaml'), 'utf8');
const handler = readFileSync(join(PARTS, 'machineadm-part-handler.py'), 'utf8');
let serial = 0;

/** A fresh scratch machine: cloud-init's state directory and the root machineadm works on. */
function machine(): { cloud: string; root: string } {
  serial += 1;
  return { cloud: join(dir, `cloud-${serial}`), root: join(dir, `root-${serial}`) };
}

/** Every file under a directory, relative to it. */
function filesUnder(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string, prefix: string): void => {
    let entries: string[];
    try {
      entries = readdirSync(d);
    } catch {
      return;
    }
    for (const e of entries.sort()) {
      const p = join(d, e);
      if (statSync(p).isDirectory()) walk(p, `${prefix}${e}/`);
      else out.push(`${prefix}${e}`);
    }
  };
  walk(root, '');
  return out;
}

/** Multipart user data made by make-mime from (file name, content, make-mime type) triples. */
function makeMime(name: string, parts: [string, string, string][]): string {
  const partDir = join(dir, `${name}.parts`);
  run('mkdir', ['-p', partDir]);
  for (const [file, content] of parts) writeScratch(partDir, file, content);
  const args = ['devel', 'make-mime', '--force', ...parts.flatMap(([file, , type]) => ['-a', `${join(partDir, file)}:${type}`])];
  const r = run('cloud-init', args);
  expect(r.status).toBe(0);
  return writeScratch(dir, name, r.stdout);
}

/** Multipart user data: the part handler, then one more part (its header and body lines). */
function afterHandler(part: string[]): string {
  return ['MIME-Version: 1.0', 'Content-Type: multipart/mixed; boundary="BOUNDARY"', '', '--BOUNDARY', 'Content-Type: text/part-handler', '', handler, '--BOUNDARY', ...part, '--BOUNDARY--', ''].join('\n');
}

describe.skipIf(skip)('the cloud-init part handler for machineadm', () => {
  it('lets cloud-init consume docs/recipes/user-data.mime with no warning and puts the MachineConfig in config.d, root only', () => {
    const m = machine();
    const log = consumeUserData(join(RECIPES, 'user-data.mime'), m.cloud, m.root);
    expect(warnings(log)).toEqual([]);
    expect(log.map((r) => r.message)).toContain(`machineadm part machineconfig.yaml written to ${m.root}/etc/machineadm/config.d/user-data-01.yaml`);
    expect(filesUnder(m.root)).toEqual(['etc/machineadm/config.d/user-data-01.yaml']);
    const file = join(m.root, 'etc/machineadm/config.d/user-data-01.yaml');
    expect(readFileSync(file, 'utf8')).toBe(machineConfig);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('leaves a file that machineadm finds with no -c (config view under the same root)', () => {
    const m = machine();
    consumeUserData(join(RECIPES, 'user-data.mime'), m.cloud, m.root);
    const r = machineadm('config', 'view', '--root', m.root, '-o', 'json');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ kind: 'MachineConfig', metadata: { name: 'worker' }, spec: { kubernetes: { role: 'worker', token: '<redacted>' } } });
  });

  it('reads the same user data when machineadm takes it itself (-c user-data), as it does through the handler', () => {
    const r = machineadm('config', 'view', '-c', join(RECIPES, 'user-data.mime'), '-o', 'json');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ kind: 'MachineConfig', metadata: { name: 'worker' }, spec: { kubernetes: { role: 'worker', token: '<redacted>' } } });
  });

  it('is needed: without it cloud-init warns that it has no handler for the MachineConfig part', () => {
    const m = machine();
    const file = makeMime('no-handler.mime', [['machineconfig.yaml', machineConfig, 'x-machineadm-config']]);
    expect(warnings(consumeUserData(file, m.cloud, m.root))).toEqual([expect.stringContaining('Unhandled unknown content-type (text/x-machineadm-config)')]);
    expect(filesUnder(m.root)).toEqual([]);
  });

  it('claims a type cloud-init keeps, unlike make-mime\'s form of application/machineadm.cluster.x-k8s.io, which reaches it as text/plain', () => {
    const file = makeMime('old-type.mime', [
      ['old.yaml', machineConfig, 'application/machineadm.cluster.x-k8s.io'],
      ['new.yaml', machineConfig, 'x-machineadm-config'],
    ]);
    expect(readFileSync(file, 'utf8')).toContain('Content-Type: text/application/machineadm.cluster.x-k8s.io;');
    expect(cloudInitParts(file, join(dir, 'cloud-types')).map((p) => p.type)).toEqual(['text/plain', 'text/x-machineadm-config']);
  });

  // One part with no multipart around it: cloud-init reads it as that part only when MIME-Version
  // is among its first 4096 bytes; machineadm reads the part either way, and warns without it.
  it.each([
    ['with MIME-Version', 'MIME-Version: 1.0\nContent-Type: text/x-machineadm-config\n\n', 'text/x-machineadm-config', false],
    // cloud-init's type for user data it did not parse as MIME: no handler claims it (a warning).
    ['without MIME-Version', 'Content-Type: text/x-machineadm-config\n\n', 'text/x-not-multipart', true],
  ])('reads a single machineadm part %s as cloud-init does, and says where cloud-init reads it otherwise', (name, headers, type, warned) => {
    const file = writeScratch(dir, `single-${name.replace(/\W+/g, '-')}.txt`, headers + machineConfig);
    const parts = cloudInitParts(file, join(dir, `cloud-single-${name.length}`));
    expect(parts.map((p) => p.type)).toEqual([type]);
    expect(parts[0]!.body).toBe(warned ? headers + machineConfig : machineConfig);
    const own = machineadm('prepare', '-c', file, '--root', join(dir, `own-single-${name.length}`), '-o', 'json');
    expect(own.status, own.stderr).toBe(0);
    const noted = own.stdout.split('\n').filter((l) => l.includes('"level":"warning"') && l.includes('one MIME part without a MIME-Version header'));
    expect(noted).toHaveLength(warned ? 1 : 0);
  });

  // Multipart user data too: without MIME-Version among its first 4096 bytes cloud-init reads it
  // as text and no part handler sees machineadm's part; machineadm reads it and warns.
  it.each([
    ['with MIME-Version', ['MIME-Version: 1.0', 'Content-Type: multipart/mixed; boundary="B"'], ['text/x-machineadm-config'], false],
    ['without MIME-Version', ['Content-Type: multipart/mixed; boundary="B"'], ['text/x-not-multipart'], true],
  ])('reads multipart user data %s as cloud-init does, and says where cloud-init reads it otherwise', (name, top, types, warned) => {
    const text = [...top, '', '--B', 'Content-Type: text/x-machineadm-config', '', machineConfig, '--B--', ''].join('\n');
    const file = writeScratch(dir, `multi-${name.replace(/\W+/g, '-')}.mime`, text);
    expect(cloudInitParts(file, join(dir, `cloud-multi-${name.length}`)).map((p) => p.type)).toEqual(types);
    const own = machineadm('prepare', '-c', file, '--root', join(dir, `own-multi-${name.length}`), '-o', 'json');
    expect(own.status, own.stderr).toBe(0);
    const noted = own.stdout.split('\n').filter((l) => l.includes('"level":"warning"') && l.includes('multipart user data without a MIME-Version header'));
    expect(noted).toHaveLength(warned ? 1 : 0);
  });

  // Python's email parser ends a part's headers at the first line that is not header-shaped: a
  // MachineConfig whose first line is `apiVersion: ...` is read as more headers, and the body
  // is empty; one that starts with a comment keeps its body.
  const withoutComments = machineConfig.split('\n').filter((l) => !l.startsWith('#')).join('\n');
  it.each([
    ['starts with apiVersion (header-shaped)', 'warns and writes nothing', withoutComments],
    ['starts with a comment', 'writes it whole', machineConfig],
  ])('with no blank line after the headers of a machineadm part that %s, it %s', (_, outcome, body) => {
    const m = machine();
    const crammed = afterHandler(['Content-Type: text/x-machineadm-config', ...body.split('\n')]);
    const file = writeScratch(dir, `crammed-${m.root.slice(-2)}.mime`, crammed);
    const log = consumeUserData(file, m.cloud, m.root);
    // machineadm reading the same user data itself takes the MachineConfig either way, and its
    // report says where cloud-init would have read nothing.
    const own = machineadm('prepare', '-c', file, '--root', join(m.root, '..', `own-${m.root.slice(-2)}`), '-o', 'json');
    expect(own.status, own.stderr).toBe(0);
    const noted = own.stdout.split('\n').filter((l) => l.includes('"level":"warning"') && l.includes('cloud-init reads its first line as a header'));
    expect(noted).toHaveLength(outcome === 'warns and writes nothing' ? 1 : 0);
    if (outcome === 'warns and writes nothing') {
      expect(warnings(log)).toEqual([expect.stringMatching(/^machineadm part part-\d+ has an empty body: put a blank line between its headers and the MachineConfig/)]);
      expect(filesUnder(m.root)).toEqual([]);
    } else {
      expect(warnings(log)).toEqual([]);
      expect(readFileSync(join(m.root, 'etc/machineadm/config.d/user-data-01.yaml'), 'utf8')).toBe(body);
    }
  });

  // A gzip MachineConfig part (base64, as EC2's 16 KB limit calls for): cloud-init hands a text/*
  // part to the handler as str decoded with surrogateescape, so gzip bytes survive only if the
  // handler encodes them back the same way.
  it.each([
    ['gzip', 'writes the MachineConfig decompressed', gzipSync(Buffer.from(machineConfig)), true],
    ['cut-short gzip', 'warns that the gzip cannot be read and writes nothing', gzipSync(Buffer.from(machineConfig)).subarray(0, 40), false],
  ])('with a %s MachineConfig part, it %s', (_, __, gz, good) => {
    const m = machine();
    const text = afterHandler([
      'Content-Type: text/x-machineadm-config',
      'Content-Transfer-Encoding: base64',
      'Content-Disposition: attachment; filename="machineconfig.yaml.gz"',
      '',
      gz.toString('base64').replace(/.{76}/g, '$&\n'),
    ]);
    const file = writeScratch(dir, `gzip-${m.root.slice(-2)}.mime`, text);
    const log = consumeUserData(file, m.cloud, m.root);
    expect(log.filter((r) => r.message.includes('Failed calling handler'))).toEqual([]);
    if (good) {
      expect(warnings(log)).toEqual([]);
      expect(readFileSync(join(m.root, 'etc/machineadm/config.d/user-data-01.yaml'), 'utf8')).toBe(machineConfig);
      const own = machineadm('config', 'view', '-c', file, '-o', 'json');
      expect(own.status, own.stderr).toBe(0);
      expect(JSON.parse(own.stdout)).toMatchObject({ metadata: { name: 'worker' } });
    } else {
      expect(warnings(log)).toEqual([expect.stringMatching(/^machineadm part machineconfig\.yaml\.gz is gzip that cannot be read \(.+\): compress it again with gzip; nothing written to /)]);
      expect(filesUnder(m.root)).toEqual([]);
    }
  });

  // A byte order mark before the headers: machineadm reads the MIME (content may start with one,
  // 3.2); cloud-init reads the whole as text/plain, so its run says so, and its summary counts it.
  it('reads MIME user data that starts with a byte order mark, and warns that cloud-init reads it as text', () => {
    const text = `\ufeffMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="B"\n\n--B\nContent-Type: text/x-machineadm-config\n\n${machineConfig}--B--\n`;
    const file = writeScratch(dir, 'bom.mime', text);
    expect(cloudInitParts(file, join(dir, 'cloud-bom')).map((p) => p.type)).toEqual(['text/plain']);
    const root = join(dir, 'own-bom');
    const own = machineadm('prepare', '-c', file, '--root', root);
    expect(own.status, own.stderr).toBe(0);
    const result = JSON.parse(readFileSync(join(root, 'run/machineadm/result.json'), 'utf8')) as { warnings: { message: string }[] };
    expect(result.warnings.map((w) => w.message)).toEqual([`${file}: MIME user data that starts with a byte order mark; machineadm read the MachineConfig, but cloud-init reads such user data as plain text and does not hand its parts to machineadm's part handler (save it as UTF-8 without a byte order mark)`]);
    // The summary's count is the result file's.
    expect(own.stdout).toMatch(/machineadm prepare: success in \S+ \(\d+ steps: \d+ changed, \d+ skipped, 1 warnings, 0 failed\)\n {2}warning: .*byte order mark/);
  });

  // cloud-init walks into a message/rfc822 part (and 22.4 hands its parts over twice); machineadm
  // reads the part inside it too.
  it('takes a MachineConfig inside a message/rfc822 part, as cloud-init does, into one file', () => {
    const m = machine();
    const text = afterHandler(['Content-Type: message/rfc822', '', 'MIME-Version: 1.0', 'Content-Type: text/x-machineadm-config', '', machineConfig]);
    const file = writeScratch(dir, 'rfc822.mime', text);
    expect(warnings(consumeUserData(file, m.cloud, m.root))).toEqual([]);
    expect(filesUnder(m.root)).toEqual(['etc/machineadm/config.d/user-data-01.yaml']);
    expect(readFileSync(join(m.root, 'etc/machineadm/config.d/user-data-01.yaml'), 'utf8')).toBe(machineConfig);
    const own = machineadm('config', 'view', '-c', file, '-o', 'json');
    expect(own.status, own.stderr).toBe(0);
    expect(JSON.parse(own.stdout)).toMatchObject({ metadata: { name: 'worker' } });
  });

  it('writes one file per part in order, and drops files of parts the user data no longer carries', () => {
    const m = machine();
    const second = machineConfig.replace('name: worker', 'name: worker-extra');
    const two = makeMime('two.mime', [
      ['handler.py', handler, 'part-handler'],
      ['a.yaml', machineConfig, 'x-machineadm-config'],
      ['b.yaml', second, 'x-machineadm-config'],
    ]);
    expect(warnings(consumeUserData(two, m.cloud, m.root))).toEqual([]);
    expect(filesUnder(m.root)).toEqual(['etc/machineadm/config.d/user-data-01.yaml', 'etc/machineadm/config.d/user-data-02.yaml']);
    expect(readFileSync(join(m.root, 'etc/machineadm/config.d/user-data-02.yaml'), 'utf8')).toBe(second);

    const one = makeMime('one.mime', [
      ['handler.py', handler, 'part-handler'],
      ['a.yaml', machineConfig, 'x-machineadm-config'],
    ]);
    expect(warnings(consumeUserData(one, join(dir, 'cloud-again'), m.root))).toEqual([]);
    expect(filesUnder(m.root)).toEqual(['etc/machineadm/config.d/user-data-01.yaml']);
  });
});
