#!/usr/bin/env node
// Runs machineadm from a checkout. Node 24 strips the TypeScript types itself; an older Node (the
// README allows any) cannot, so this file stays plain JavaScript that any Node parses, and hands
// the run to the Node that `npm ci` pinned in node_modules.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const canStripTypes = Boolean(process.features && process.features.typescript);

if (canStripTypes) {
  await import('../src/cli/bin.ts');
} else {
  const pinned = fileURLToPath(new URL(`../node_modules/node/bin/node${process.platform === 'win32' ? '.exe' : ''}`, import.meta.url));
  if (!existsSync(pinned) || process.env.MACHINEADM_REEXEC === '1') {
    process.stderr.write(
      `error: machineadm runs from source on Node 24 or later; this is Node ${process.versions.node}\n` +
        'hint: run "npm ci" in the checkout (it installs the pinned Node 24), then "npx machineadm ..." or "npm run machineadm -- ..."\n',
    );
    process.exit(2);
  }
  // Its way of ending becomes ours. Ctrl+C and a closed terminal reach the whole process group,
  // the child included: forwarding them too would be the second signal that means "exit at once".
  // A kill(1) reaches only us, so SIGTERM is passed on.
  const child = spawn(pinned, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, MACHINEADM_REEXEC: '1' },
  });
  process.on('SIGTERM', () => child.kill('SIGTERM'));
  process.on('SIGINT', () => {});
  process.on('SIGHUP', () => {});
  child.on('error', (error) => {
    process.stderr.write(`error: could not start ${pinned}: ${error.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    }
    process.exit(code ?? 1);
  });
}
