// The API reference page (docs/api-reference.md), made from the schema's own words: every field
// with its type, whether it is required, its default, description and example.
// scripts/api-reference.mjs writes it; a test keeps the committed page current. Pure.
import { dump } from 'js-yaml';
import type { JsonSchema } from './dsl.ts';
import { allFields } from './fields.ts';
import { exampleAsWritten } from './explain.ts';
import { API_VERSION } from './index.ts';

function yaml(value: unknown): string {
  return dump(value, { lineWidth: 100, noRefs: true }).replace(/\n$/, '');
}

function code(text: string): string {
  return `\`${text.replaceAll('`', "'")}\``;
}

export function renderApiReference(root: JsonSchema): string {
  const fields = allFields(root);
  const anchors = headingAnchors(fields.map((f) => f.path));
  const out = [
    `# MachineConfig API reference (${API_VERSION})`,
    '',
    '<!-- generated from src/config/schema by `node scripts/api-reference.mjs`; do not edit by hand -->',
    '',
    'Every field of MachineConfig: its type, whether it must be given, its default, what it means and an',
    'example. The same text is printed by `machineadm explain FIELD`; `machineadm config print-defaults`',
    'prints a configuration with every default. A `*` in a path stands for a map key (a registry host).',
    'Lists add no segment: `spec.files.path` is the `path` of each item of `spec.files`.',
    '',
    '## Fields',
    '',
    ...fields.map((f, i) => `${'  '.repeat(f.path.split('.').length - 1)}- [${f.path.split('.').at(-1)}](#${anchors[i]})`),
  ];
  for (const f of fields) {
    out.push('', `### ${f.path}`, '');
    const facts = [code(f.type), f.required ? 'required' : 'optional', ...(f.default !== undefined ? [`default ${code(JSON.stringify(f.default))}`] : []), ...(f.secret ? ['secret: never printed'] : [])];
    out.push(facts.join(' · '), '', f.description ?? '');
    if (f.example !== undefined) out.push('', '```yaml', yaml(exampleAsWritten(f)), '```');
  }
  return out.join('\n') + '\n';
}

// GitHub's heading anchors: lower case, punctuation but "-" and "_" dropped, spaces to "-"; a
// repeated anchor gets "-1", "-2", ... (registries and registries.* read the same).
function headingAnchors(headings: string[]): string[] {
  const seen = new Map<string, number>();
  return headings.map((h) => {
    const base = h.toLowerCase().replace(/[^a-z0-9 _-]/g, '').replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    return n === 0 ? base : `${base}-${n}`;
  });
}
