// The command line of the build: parses its options (--help prints the usage at the top of
// scripts/build.mjs).
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { BuildError, ROOT } from './common.mjs';
import { TARGETS } from './node-release.mjs';

export function parseArgs(argv) {
  const options = { targets: Object.keys(TARGETS), outDir: join(ROOT, 'dist'), strip: false, compress: true, checkReproducible: false, quiet: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new BuildError(`${flag} needs a value`);
      return v;
    };
    if (flag === '--targets' || flag === '--target') {
      options.targets = value().split(',').map((t) => t.trim()).filter(Boolean);
      const unknown = options.targets.filter((t) => !(t in TARGETS));
      if (unknown.length || options.targets.length === 0) throw new BuildError(`unknown target "${unknown.join(', ')}" (known: ${Object.keys(TARGETS).join(', ')})`);
    } else if (flag === '--out-dir') options.outDir = resolve(value());
    else if (flag === '--strip') options.strip = true;
    else if (flag === '--no-compress') options.compress = false;
    else if (flag === '--check-reproducible') options.checkReproducible = true;
    else if (flag === '--quiet') options.quiet = true;
    else if (flag === '--help' || flag === '-h') {
      process.stdout.write(readFileSync(join(ROOT, 'scripts', 'build.mjs'), 'utf8').split('\n').slice(1, 13).map((l) => l.replace(/^\/\/ ?/, '')).join('\n') + '\n');
      process.exit(0);
    } else throw new BuildError(`unknown option "${arg}" (see node scripts/build.mjs --help)`);
  }
  return options;
}
