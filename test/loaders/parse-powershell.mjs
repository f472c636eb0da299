// Parses PowerShell files with the tree-sitter grammar and prints, as JSON, every ERROR or MISSING
// node per file. Run as its own process with --liftoff-only: WebAssembly tier-up compilation
// otherwise costs seconds on a busy machine.
//   node --liftoff-only test/loaders/parse-powershell.mjs [--leaves] FILE...
// --leaves adds every leaf of the syntax tree ({ type, text }), so a test can see which nodes a
// value landed in.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Language, Parser } from 'web-tree-sitter';

const require = createRequire(import.meta.url);
await Parser.init();
const language = await Language.load(require.resolve('tree-sitter-powershell/tree-sitter-powershell.wasm'));
const parser = new Parser();
parser.setLanguage(language);
const results = {};
const withLeaves = process.argv[2] === '--leaves';
for (const file of process.argv.slice(withLeaves ? 3 : 2)) {
  const tree = parser.parse(readFileSync(file, 'utf8'));
  const problems = [];
  const leaves = [];
  const walk = (node) => {
    if (node.type === 'ERROR' || node.isMissing) {
      problems.push(`${node.isMissing ? `MISSING ${node.type}` : 'ERROR'} at line ${node.startPosition.row + 1}, column ${node.startPosition.column + 1}`);
    }
    if (node.childCount === 0) leaves.push({ type: node.type, text: node.text });
    for (const child of node.children) walk(child);
  };
  walk(tree.rootNode);
  results[file] = { root: tree.rootNode.type, problems, ...(withLeaves ? { leaves } : {}) };
}
process.stdout.write(JSON.stringify(results) + '\n');
