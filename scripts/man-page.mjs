// Writes docs/machineadm.1 from the command line's own definitions. Runs on the pinned Node 24,
// which reads TypeScript: node scripts/man-page.mjs (npm run docs).
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { manPageText } from '../src/cli/man-page-source.ts';

const target = fileURLToPath(new URL('../docs/machineadm.1', import.meta.url));
writeFileSync(target, manPageText());
process.stdout.write(`wrote ${target}\n`);
