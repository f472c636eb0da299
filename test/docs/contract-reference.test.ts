// The contract (docs/contract.md, the index, and its pages in docs/contract/) must say what the code
// does: its command reference (section 1.1, docs/contract/command-reference.md) is the CLI's own
// help, its exit codes (section 2, exit-codes.md) are src/errors.ts's ExitCode, and its files
// (section 5, files.md) are the paths the code writes. UPDATE_GOLDEN=1 rewrites the command
// reference; a reviewer reads the diff.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BEGIN, END, commandPaths, exitCodes, renderCommandReference } from '../support/contract-reference.ts';
import { REPO, contractPage, contractPages, readContractPage } from '../support/contract-pages.ts';
import { CA_BUNDLE, CERTS_DIR, CONTAINERD_CONFIG, PROXY_DROPIN } from '../../src/containerd/paths.ts';
import { DEFAULT_SOURCES } from '../../src/config/load.ts';
import { HISTORY_FILE } from '../../src/report/history.ts';
import { REPORT_RESULT_COPY, REPORT_RESULT_FILE, RESULT_COPY, RESULT_FILE, RUN_DIR, STATUS_FILE } from '../../src/report/outcome.ts';
import { SENTINEL_LINUX } from '../../src/report/sentinel.ts';
import { SPOOL_DIR } from '../../src/report/spool.ts';
import { STATE_FILE } from '../../src/engine/state.ts';
import { RESUME_RECORD } from '../../src/engine/resume-record.ts';
import { SYSCTL_FILE } from '../../src/config/schema/sysctl-key.ts';
import { MODULES_FILE } from '../../src/linux/modules.ts';
import { FSTAB } from '../../src/linux/storage/fstab.ts';
import { BACKUP_DIR, STATE_DIR, WRITTEN_DIR, archivedName } from '../../src/host/index.ts';
import { RESUMED_RESULT, RUN_LOCK } from '../../src/phases/run.ts';
import { RESUME_UNIT } from '../../src/host/resume.ts';
import { SUDOERS_DIR } from '../../src/linux/steps/users.ts';
import { DEBIAN_SOURCES_DIR, SOURCES_FILE_NAME, TIMESYNCD_DROP_IN } from '../../src/linux/time-servers.ts';

const REFERENCE = contractPage('command-reference.md');

function section(text: string, heading: RegExp): string {
  const start = text.search(heading);
  if (start < 0) throw new Error(`the contract page has no heading ${heading}`);
  const rest = text.slice(start + 1);
  const next = rest.search(/^## /m);
  return next < 0 ? rest : rest.slice(0, next);
}

describe('the command reference in docs/contract/command-reference.md', () => {
  it('is what the command line prints for --help, command by command', async () => {
    const text = readFileSync(REFERENCE, 'utf8');
    const generated = await renderCommandReference();
    const begin = text.indexOf(BEGIN);
    const end = text.indexOf(END);
    if (process.env.UPDATE_GOLDEN === '1' && begin >= 0 && end > begin) {
      writeFileSync(REFERENCE, text.slice(0, begin) + generated + text.slice(end + END.length));
      return;
    }
    expect(begin, 'docs/contract/command-reference.md lacks the generated command reference markers').toBeGreaterThan(-1);
    const heading = text.search(/^### 1\.1 Command reference$/m);
    expect(heading, 'docs/contract/command-reference.md lacks its heading, ### 1.1 Command reference').toBeGreaterThan(-1);
    expect(begin, 'the generated command reference belongs in section 1.1 (of section 1)').toBeGreaterThan(heading);
    expect(text.slice(begin, end + END.length), 'docs/contract/command-reference.md is out of date: run UPDATE_GOLDEN=1 npx vitest run test/docs/contract-reference.test.ts and commit it').toBe(generated);
  });

  it.each(commandPaths().map((path) => [path.join(' ')]))('names machineadm %s in its summary', (path) => {
    const summary = section(readContractPage('cli.md'), /^## 1\. /m).split(BEGIN)[0]!;
    expect(summary).toMatch(new RegExp(`machineadm (\\S+ )*${path.split(' ').at(-1)}\\b`));
  });
});

describe('the exit codes in docs/contract/exit-codes.md', () => {
  it('are exactly the ones in src/errors.ts', () => {
    const table = section(readContractPage('exit-codes.md'), /^## 2\. /m);
    const documented = [...table.matchAll(/^\| ([\d, ]+) \|/gm)].flatMap((m) => m[1]!.split(',').map((n) => Number(n.trim())));
    expect(documented.sort((a, b) => a - b)).toEqual(exitCodes());
  });
});

describe('the files in docs/contract/files.md (section 5)', () => {
  const written = [
    ...DEFAULT_SOURCES.map((p) => p.replace(/\/$/, '')),
    STATE_DIR + STATE_FILE,
    STATE_DIR + HISTORY_FILE,
    STATE_DIR + SPOOL_DIR,
    STATE_DIR + RESUMED_RESULT,
    STATE_DIR + RESUME_RECORD,
    STATE_DIR + RUN_LOCK,
    STATE_DIR + RESULT_COPY,
    STATE_DIR + REPORT_RESULT_COPY,
    REPORT_RESULT_FILE,
    RUN_DIR,
    STATUS_FILE,
    RESULT_FILE,
    SENTINEL_LINUX,
    RESUME_UNIT,
    MODULES_FILE,
    FSTAB,
    SYSCTL_FILE,
    CONTAINERD_CONFIG,
    CERTS_DIR,
    CA_BUNDLE,
    PROXY_DROPIN,
    SUDOERS_DIR,
    `${DEBIAN_SOURCES_DIR}/${SOURCES_FILE_NAME}`,
    TIMESYNCD_DROP_IN,
    `${STATE_DIR}/${WRITTEN_DIR}/`,
    `${STATE_DIR}/${BACKUP_DIR}/`,
    `${archivedName(STATE_DIR, '<time>')}/`,
  ];
  const files = section(readContractPage('files.md'), /^## 5\. /m);
  const listed = [...files.matchAll(/^\| `(\/[^`]+)`/gm)].map((m) => m[1]!);

  it.each(written.map((p) => [p]))('list %s, a path the code writes or reads', (path) => {
    expect(files).toContain(`\`${path}`);
  });

  it.each(listed.map((p) => [p]))('list %s only because the code has it', (path) => {
    expect(written.some((p) => path === p || path.startsWith(`${p}/`))).toBe(true);
  });
});

describe('the numbered promises in docs/contract/*.md', () => {
  // Each item of a numbered list, up to the next item, a blank line or the end of its page, on every page.
  const items = contractPages().flatMap((page) => [...readContractPage(page).matchAll(/^\d+\. [\s\S]*?(?=\n\d+\. |\n\n|\n#|\s*$(?![\s\S]))/gm)].map((m) => m[0]));
  const reference = /\(checked by (test\/[\w./-]+\.test\.ts): "([^"]+)"\)/g;

  it('are there to check', () => {
    expect(items.length).toBeGreaterThanOrEqual(20);
  });

  it.each(items.map((item) => [item.split('\n')[0]!.slice(0, 70), item]))('%s... names the test that would catch its breach, and that test exists', (_first, item) => {
    const refs = [...item.matchAll(reference)];
    expect(refs.length, `no "(checked by test/...: "title")" in:\n${item}`).toBeGreaterThan(0);
    for (const [, file, title] of refs) {
      const path = join(REPO, file!);
      expect(existsSync(path), file).toBe(true);
      expect(readFileSync(path, 'utf8'), `${file} has no test titled "${title}"`).toContain(title!);
    }
  });
});
