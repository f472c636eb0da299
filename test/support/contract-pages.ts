// Where the contract lives: docs/contract.md is its index, and docs/contract/*.md holds one page per
// part (commands, exit codes, configuration, ...). Tests that read a section read the page it is on.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const REPO = join(import.meta.dirname, '..', '..');
export const CONTRACT_INDEX = join(REPO, 'docs', 'contract.md');
export const CONTRACT_DIR = join(REPO, 'docs', 'contract');

/** The path of one page, e.g. contractPage('exit-codes.md'). */
export function contractPage(name: string): string {
  return join(CONTRACT_DIR, name);
}

export function readContractPage(name: string): string {
  return readFileSync(contractPage(name), 'utf8');
}

/** The file name of every page in docs/contract/ (the index not included), sorted. */
export function contractPages(): string[] {
  return readdirSync(CONTRACT_DIR).filter((name) => name.endsWith('.md')).sort();
}
