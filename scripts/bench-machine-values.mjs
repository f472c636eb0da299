#!/usr/bin/env node
// What asking for metadata services costs a machine its firmware (DMI) marks as bare metal: the
// time of `machineadm plan` for a node named { fromMachine: localHostname } on a scratch root with
// a Dell server's DMI strings, against a metadata address that never answers (as 169.254.169.254
// on a network without one) and against this machine's own default address, next to the same
// plan with --set cloud=bare-metal (no metadata service asked). Prints medians in milliseconds
// and the probing's cost (the difference) against its goal of at most 1000 ms.
//
//   node scripts/bench-machine-values.mjs [--runs 3]
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const runs = Number(args[args.indexOf('--runs') + 1] ?? 3) || 3;
const GOAL_MS = 1000;

const scratch = mkdtempSync(join(tmpdir(), 'machineadm-bench-values-'));
const root = join(scratch, 'root');
mkdirSync(join(root, 'sys/class/dmi/id'), { recursive: true });
for (const [name, value] of Object.entries({ sys_vendor: 'Dell Inc.', product_name: 'PowerEdge R650', bios_vendor: 'Dell Inc.', product_uuid: '4c4c4544-0035-4b10-8052-b4c04f4e4d32' })) {
  writeFileSync(join(root, 'sys/class/dmi/id', name), `${value}\n`);
}
const config = join(scratch, 'node.yaml');
writeFileSync(
  config,
  'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  kubernetes:\n    role: worker\n    bootstrap: join\n    controlPlaneEndpoint: cp.example:6443\n    token: abcdef.0123456789abcdef\n    caCertHashes: ["sha256:0f0e0d0c0b0a09080706050403020100f0e0d0c0b0a09080706050403020100f"]\n    node:\n      name: { fromMachine: localHostname }\n      labels: { example.com/uuid: { fromMachine: instanceId } }\n',
);

// Accepts connections and never answers.
const silent = createServer(() => undefined);
await new Promise((r) => silent.listen(0, '127.0.0.1', r));
const silentUrl = `http://127.0.0.1:${silent.address().port}`;

function plan(extra, env) {
  return new Promise((done) => {
    const started = process.hrtime.bigint();
    execFile(process.execPath, [join(ROOT, 'bin/machineadm.js'), 'plan', '-c', config, '--root', root, ...extra], { env: { ...process.env, ...env }, timeout: 120_000 }, (error, stdout) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const source = /localHostname from (.*)/.exec(stdout)?.[1] ?? `(no value: ${error ? error.message.split('\n')[0] : 'none'})`;
      done({ ms, source });
    });
  });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const cases = [
  { label: 'plan, --set cloud=bare-metal (no metadata asked)', extra: ['--set', 'cloud=bare-metal'], env: {} },
  { label: 'plan, metadata address never answers', extra: [], env: { MACHINEADM_IMDS_ENDPOINT: silentUrl } },
  { label: "plan, this machine's default metadata address", extra: [], env: { MACHINEADM_IMDS_ENDPOINT: '' } },
];
const results = [];
for (const c of cases) {
  const samples = [];
  let source = '';
  for (let i = 0; i < runs; i++) {
    const r = await plan(c.extra, c.env);
    samples.push(r.ms);
    source = r.source;
  }
  results.push({ ...c, ms: median(samples), source });
}
silent.closeAllConnections();
silent.close();
rmSync(scratch, { recursive: true, force: true });

const base = results[0].ms;
console.log(`median of ${runs} runs, bare-metal DMI (Dell PowerEdge R650):`);
for (const r of results) console.log(`  ${r.label.padEnd(50)} ${r.ms.toFixed(0).padStart(6)} ms   localHostname from ${r.source}`);
for (const r of results.slice(1)) {
  const cost = r.ms - base;
  console.log(`  probing cost, ${r.label.replace('plan, ', '').padEnd(36)} ${cost.toFixed(0).padStart(6)} ms   goal <= ${GOAL_MS} ms: ${cost <= GOAL_MS ? 'met' : 'NOT met'}`);
}
