// The Windows loader is parsed by a real PowerShell grammar (tree-sitter), and its order of work is
// checked: download (hashed as it is written), the hash against the pinned value, then run. It is
// run by PowerShell 7 in powershell-loader-run.test.ts.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scratchDir } from '../support/tmp.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const LOADER = join(ROOT, 'docs/loaders/machineadm-loader.ps1');
const dir = scratchDir('machineadm-ps-');

type Parsed = Record<string, { root: string; problems: string[] }>;

function parse(...files: string[]): Parsed {
  const out = execFileSync(process.execPath, ['--liftoff-only', join(ROOT, 'test/loaders/parse-powershell.mjs'), ...files], { encoding: 'utf8', cwd: ROOT });
  return JSON.parse(out) as Parsed;
}

describe('the PowerShell loader', () => {
  const text = readFileSync(LOADER, 'utf8');

  it('parses without ERROR or MISSING nodes, and a broken copy does not', () => {
    // The broken copy proves the check can fail: an unclosed block and a stray parenthesis.
    const broken = join(dir, 'broken.ps1');
    writeFileSync(broken, text.replace('if ($actual -ne $expected) {', 'if ($actual -ne $expected)) {').replace(/\n}\s*$/, '\n'));
    const parsed = parse(LOADER, broken);
    expect(parsed[LOADER]).toEqual({ root: 'program', problems: [] });
    expect(parsed[broken]!.problems.length).toBeGreaterThan(0);
  });

  it('checks the pinned SHA-256, hashed as the download is written, before it installs or runs anything', () => {
    const hash = text.indexOf('$actual = $got.Sha256');
    const refuse = text.indexOf('Stop-Loader 3 "SHA-256 of');
    const install = text.indexOf('Move-Item');
    const run = text.indexOf('& $Destination @argv');
    // Every byte written passes through the SHA-256 on its way into the file.
    expect(text).toMatch(/New-Object Security\.Cryptography\.CryptoStream\(\[IO\.File\]::Create\(\$Path\), \$sha, /);
    expect(hash).toBeGreaterThan(text.indexOf('Receive-Binary $from $download'));
    expect(refuse).toBeGreaterThan(hash);
    expect(install).toBeGreaterThan(refuse);
    expect(run).toBeGreaterThan(install);
  });

  it('ends with exit 2 on a missing -BaseUrl or -Sha256 instead of prompting for it', () => {
    // A Mandatory parameter makes powershell.exe -File prompt, and an unattended first logon would wait forever.
    expect(text).not.toMatch(/Parameter\(\s*Mandatory/i);
    const download = text.indexOf('Receive-Binary $from $download');
    const baseUrlCheck = text.search(/if \(\$BaseUrl -notmatch '\^https\?:\/\/'\) \{\s*Stop-Loader 2/);
    const shaCheck = text.search(/if \(\$expected -notmatch '\^\[0-9a-f\]\{64\}\$'\) \{\s*Stop-Loader 2/);
    expect(baseUrlCheck).toBeGreaterThan(0);
    expect(shaCheck).toBeGreaterThan(0);
    expect(baseUrlCheck).toBeLessThan(download);
    expect(shaCheck).toBeLessThan(download);
  });

  it('installs the published .minisig next to the binary, so that verify --self works on what it installed', () => {
    const fetchSignature = text.indexOf('Invoke-WebRequest -Uri "$url.minisig"');
    const install = text.indexOf('Move-Item -LiteralPath $download -Destination $Destination');
    const installSignature = text.indexOf('Move-Item -LiteralPath $signature -Destination "$Destination.minisig"');
    const run = text.indexOf('& $Destination @argv');
    expect(fetchSignature).toBeGreaterThan(text.indexOf('Stop-Loader 3'));
    expect(install).toBeGreaterThan(fetchSignature);
    expect(installSignature).toBeGreaterThan(install);
    expect(run).toBeGreaterThan(installSignature);
    // An older signature must not stay beside a binary it does not sign.
    expect(text).toContain('Remove-Item -LiteralPath "$Destination.minisig"');
  });
});
