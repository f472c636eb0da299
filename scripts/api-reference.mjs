// Writes docs/api-reference.md from the schema (src/config/schema). Runs on the pinned Node 24,
// which reads TypeScript: node scripts/api-reference.mjs (npm run docs).
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { machineConfigJsonSchema } from '../src/config/schema/index.ts';
import { renderApiReference } from '../src/config/schema/reference.ts';

const target = fileURLToPath(new URL('../docs/api-reference.md', import.meta.url));
writeFileSync(target, renderApiReference(machineConfigJsonSchema()));
process.stdout.write(`wrote ${target}\n`);
