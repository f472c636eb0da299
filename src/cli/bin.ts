// The executable's entry point: the only place that touches process.argv and the exit code.
import { isSea } from 'node:sea';
import { main } from './main.ts';
import { processIo } from './io.ts';

// How the resume after a reboot starts machineadm again: the single executable is itself; from a
// checkout it is Node with its flags and the script.
const self = isSea() ? [process.execPath] : [process.execPath, ...process.execArgv, process.argv[1] ?? 'bin/machineadm.js'];

main(process.argv.slice(2), processIo(self)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
