// The executable's entry point: the only place that touches process.argv and the exit code.
import { isSea } from 'node:sea';
import { main } from './main.ts';
import { processIo } from './io.ts';

// How the resume after a reboot starts machineadm again: the single executable is itself; from a
// checkout it is Node with its flags and the script.
const self = isSea() ? [process.execPath] : [process.execPath, ...process.execArgv, process.argv[1] ?? 'bin/machineadm.js'];

// Once nothing is left to do (no timer, request or write pending), the executable exits without
// Node's teardown of the environment (waiting for V8's background tasks, disposing the heap): init
// and plan end 3-6 ms sooner (medians of 41 runs side by side). Not when the build runs this code
// to take its caches, which it does on that event.
if (isSea()) process.once('beforeExit', () => process.exit());
main(process.argv.slice(2), processIo(self)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
