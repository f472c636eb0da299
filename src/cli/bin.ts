// The executable's entry point: the only place that touches process.argv and the exit code.
import { main } from './main.ts';
import { processIo } from './io.ts';

main(process.argv.slice(2), processIo()).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
