// docs/machineadm.1 is made from the command line's own definitions (scripts/man-page.mjs), is
// current, and renders without a warning.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { manPageText } from '../../src/cli/man-page-source.ts';
import { commandPaths } from '../support/contract-reference.ts';
import { missingRequirement } from '../support/environment.ts';

const PAGE = join(import.meta.dirname, '..', '..', 'docs', 'machineadm.1');

describe('docs/machineadm.1', () => {
  it('is what the command definitions generate', () => {
    const generated = manPageText();
    if (process.env.UPDATE_GOLDEN === '1') writeFileSync(PAGE, generated);
    expect(readFileSync(PAGE, 'utf8'), 'docs/machineadm.1 is out of date: run npm run docs (or node scripts/man-page.mjs) and commit it').toBe(generated);
  });

  it('lists every exit code of the contract under EXIT STATUS', () => {
    const contract = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'contract', 'exit-codes.md'), 'utf8');
    const codes = [...contract.matchAll(/^\| ([\d, ]+) \|/gm)].map((m) => m[1]!.trim());
    expect(codes).toContain('6');
    const page = manPageText();
    const section = page.slice(page.indexOf('.SH EXIT STATUS'), page.indexOf('.SH ENVIRONMENT'));
    for (const code of codes) expect(section, `exit code ${code}`).toContain(`\\fB${code}\\fR`);
  });

  it.skipIf(missingRequirement({ commands: ['groff'] }))('renders without a warning and names every command', () => {
    const run = spawnSync('groff', ['-man', '-Tutf8', '-ww', PAGE], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const text = execFileSync('groff', ['-man', '-Tascii', '-P-cbou', PAGE], { encoding: 'utf8' });
    for (const path of commandPaths()) expect(text, path.join(' ')).toContain(`machineadm ${path.join(' ')} `);
    expect(text).toContain('MACHINEADM_DEBUG');
  });
});
