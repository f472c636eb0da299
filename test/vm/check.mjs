#!/usr/bin/env node
// The VM job's checks (test/vm/boot.sh): reads what the boots left in RUN (files read back from the
// guest's disk, the collector's logs, the serial logs) and says, check by check, what held. Exits 1
// when any check failed.
//   node test/vm/check.mjs RUN
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const run = process.argv[2];
if (!run) {
  process.stderr.write('usage: check.mjs RUN\n');
  process.exit(2);
}
const resumed = join(run, 'after-resume');
const reset = join(run, 'after-reset');

const text = (path) => (existsSync(path) ? readFileSync(path, 'utf8') : undefined);
const need = (path) => {
  const t = text(path);
  if (t === undefined) throw new Error(`${path} is missing`);
  return t;
};
const json = (path) => JSON.parse(need(path));
/** JSON lines, skipping what is not JSON (the journal also has the unit's stderr lines). */
const jsonLines = (path) => need(path).split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
const sysctls = (path) => Object.fromEntries(need(path).trim().split('\n').map((l) => l.split('=')));
const manifestLines = (path) => new Set(need(path).trim().split('\n'));
const seqOf = (id) => Number(id.slice(id.lastIndexOf('.') + 1));

const CONFIG = readFileSync(new URL('seed/machineconfig.yaml', import.meta.url), 'utf8');
const META_DATA = readFileSync(new URL('seed/meta-data', import.meta.url), 'utf8');
const INSTANCE_ID = /^instance-id: (.+)$/m.exec(META_DATA)[1];
const LOCAL_HOSTNAME = /^local-hostname: (.+)$/m.exec(META_DATA)[1];
const SET = { 'net.ipv4.ip_forward': '1', 'net.bridge.bridge-nf-call-iptables': '1', 'fs.inotify.max_user_instances': '8192' };

const checks = [];
const check = (name, fn) => checks.push({ name, fn });

// Each check returns what it verified (one line) or throws what is wrong.
check('cloud-init ran machineadm from runcmd, with the MachineConfig its part handler wrote', () => {
  const written = need(join(resumed, 'user-data-01.yaml'));
  if (written !== CONFIG) throw new Error('/etc/machineadm/config.d/user-data-01.yaml is not the MachineConfig part byte for byte');
  const log = need(join(resumed, 'cloud-init.log'));
  if (!log.includes('written to /etc/machineadm/config.d/user-data-01.yaml')) throw new Error("cloud-init.log does not show the part handler writing the part");
  const unhandled = log.split('\n').find((l) => l.includes('Unhandled unknown content-type'));
  if (unhandled) throw new Error(`cloud-init did not hand a part to the handler: ${unhandled}`);
  const events = jsonLines(join(resumed, 'vmtest', 'init.jsonl'));
  if (events[0]?.type !== 'run.started' || events[0]?.command !== 'init') throw new Error('init.jsonl does not start with run.started of init');
  const exit = text(join(resumed, 'vmtest', 'init.exit'))?.trim();
  if (exit !== '4') throw new Error(`machineadm init in runcmd exited with ${exit ?? '(no exit code recorded)'}, expected 4 (reboot required)`);
  const output = need(join(resumed, 'cloud-init-output.log'));
  if (!output.includes('reboot: step prepare/reboot-if-required requires a reboot')) throw new Error('cloud-init-output.log has no "reboot: step prepare/reboot-if-required requires a reboot" line');
  const error = output.split('\n').find((l) => l.startsWith('error:'));
  if (error) throw new Error(`machineadm printed an error line: ${error}`);
  return `part handler wrote the part byte for byte, no unhandled part; runcmd's init exited 4 with a "reboot:" line and no "error:" line`;
});

check('machineadm rebooted the guest and its resume unit finished the run', () => {
  const before = need(join(resumed, 'vmtest', 'before.bootid')).trim();
  const after = need(join(resumed, 'vmtest', 'after-init.bootid')).trim();
  if (before === after) throw new Error(`the boot id did not change (${before}): no reboot between init and its end`);
  const initRun = jsonLines(join(resumed, 'vmtest', 'init.jsonl'))[0].runId;
  const part2 = jsonLines(join(resumed, 'vmtest', 'resume.out'));
  if (part2.length === 0) throw new Error('machineadm-resume.service wrote no events to the journal');
  if (part2.some((e) => e.runId !== initRun)) throw new Error(`the resumed events are not all of run ${initRun}`);
  if (need(join(resumed, 'vmtest', 'after-init.manifest')).includes('machineadm-resume.service')) throw new Error('the resume unit is still registered after the run');
  const warnings = need(join(resumed, 'vmtest', 'resume.warnings')).split('\n').filter((l) => l.includes('machineadm-resume'));
  if (warnings.length) throw new Error(`systemd warned about the resume unit: ${warnings.join(' | ')}`);
  return `boot id ${before.slice(0, 8)} -> ${after.slice(0, 8)}; the unit went on as run ${initRun} (${part2.length} events), then removed itself; systemd had no warning about it`;
});

check('result.json says finished with the result of the whole run', () => {
  const result = json(join(resumed, 'result.json'));
  const fromRun = json(join(resumed, 'vmtest', 'run-result.json'));
  if (JSON.stringify(result) !== JSON.stringify(fromRun)) throw new Error('/run/machineadm/result.json and its copy in the state directory differ');
  const part1 = jsonLines(join(resumed, 'vmtest', 'init.jsonl'));
  const part2 = jsonLines(join(resumed, 'vmtest', 'resume.out'));
  const want = { state: 'finished', result: 'success', exitCode: 0, command: 'init', runId: part1[0].runId };
  for (const [k, v] of Object.entries(want)) if (result[k] !== v) throw new Error(`result.json ${k} is ${JSON.stringify(result[k])}, expected ${JSON.stringify(v)}`);
  if (result.resumedAt?.length !== 1) throw new Error(`result.json resumedAt is ${JSON.stringify(result.resumedAt)}, expected one time`);
  const phases = result.phases.map((p) => p.name).join(',');
  if (phases !== 'prepare,prepare,provision,report') throw new Error(`result.json phases are ${phases}`);
  // The changes happened before the reboot: they must count in the result of the whole run.
  const steps = result.phases.flatMap((p) => p.steps);
  for (const id of ['prepare/kernel-modules/load', 'prepare/sysctls/apply', 'prepare/files', 'prepare/containerd/config', 'prepare/containerd/restart']) {
    const step = steps.find((s) => s.id === id && s.result === 'success' && s.changes?.length);
    if (!step) throw new Error(`result.json has no ${id} that succeeded with changes`);
  }
  const d1 = part1.find((e) => e.type === 'run.finished')?.durationMs;
  const d2 = part2.find((e) => e.type === 'run.finished')?.durationMs;
  if (result.durationMs !== d1 + d2) throw new Error(`result.json durationMs is ${result.durationMs}, not the sum of the parts before and after the reboot (${d1} + ${d2})`);
  if (result.lastEventId !== part2.at(-1).id) throw new Error(`result.json lastEventId ${result.lastEventId} is not the run's last event ${part2.at(-1).id}`);
  return `finished, success, exit 0, one resume; part 1's changes (modules, sysctls, files, containerd's config and restart) in it; durationMs ${result.durationMs} = ${d1} before the reboot + ${d2} after`;
});

check('kubeadm join ran through the stand-in and the Cluster API sentinel is written', () => {
  const calls = need(join(resumed, 'vmtest', 'kubeadm.log')).trim().split('\n').map((l) => JSON.parse(l));
  const join_ = calls.find((c) => c.argv.includes('join'));
  if (!join_) throw new Error(`the stand-in saw no join: ${calls.map((c) => c.argv.join(' ')).join(' | ')}`);
  const manifest = need(join(resumed, 'vmtest', 'after-init.manifest'));
  for (const path of ['/etc/kubernetes/kubelet.conf', '/var/lib/kubelet/config.yaml']) if (!manifest.includes(`${path} f`)) throw new Error(`${path} is missing after the join`);
  const step = json(join(resumed, 'result.json')).phases.flatMap((p) => p.steps).find((s) => s.id === 'provision/kubeadm/join');
  if (step?.result !== 'success') throw new Error(`the join step is ${JSON.stringify(step)}`);
  const sentinel = text(join(resumed, 'vmtest', 'sentinel'));
  if (sentinel !== 'success\n') throw new Error(`/run/cluster-api/bootstrap-success.complete holds ${JSON.stringify(sentinel)}`);
  return `${step.id} succeeded (the stand-in ran kubeadm ${join_.argv.join(' ')}); kubelet.conf written; sentinel says success`;
});

check("the node's name and a label are read from the instance data the guest's cloud-init wrote", () => {
  const machine = json(join(resumed, 'result.json')).machine;
  const values = Object.fromEntries((machine.machineValues ?? []).map((v) => [v.field, v]));
  const expected = { 'spec.kubernetes.node.name': INSTANCE_ID, 'spec.kubernetes.node.labels["example.com/host"]': LOCAL_HOSTNAME };
  for (const [field, value] of Object.entries(expected)) {
    const got = values[field];
    if (got?.value !== value || got.source !== '/run/cloud-init/instance-data.json') throw new Error(`${field} is ${JSON.stringify(got)}, not ${value} from /run/cloud-init/instance-data.json`);
  }
  if (machine.nodeName !== INSTANCE_ID || machine.nodeName === machine.hostname) throw new Error(`result.json names the node ${machine.nodeName} (hostname ${machine.hostname}), not ${INSTANCE_ID}`);
  return `node.name = ${INSTANCE_ID} (v1.instance_id), label example.com/host = ${LOCAL_HOSTNAME} (ds.meta_data.local_hostname, meta-data's local-hostname), both from /run/cloud-init/instance-data.json`;
});

check("the modules are loaded and the sysctls set in the guest's kernel", () => {
  const lsmod = need(join(resumed, 'vmtest', 'lsmod'));
  for (const m of ['br_netfilter', 'overlay']) if (!new RegExp(`^${m}\\s`, 'm').test(lsmod)) throw new Error(`lsmod does not list ${m}`);
  const builtin = need(join(resumed, 'vmtest', 'builtin')).trim();
  if (builtin) throw new Error(`not loadable modules in this kernel: ${builtin}`);
  const before = sysctls(join(resumed, 'vmtest', 'before.sysctl'));
  const after = sysctls(join(resumed, 'vmtest', 'after-init.sysctl'));
  for (const [k, v] of Object.entries(SET)) if (after[k] !== v) throw new Error(`${k} is ${after[k]}, expected ${v}`);
  const changed = Object.keys(SET).filter((k) => before[k] !== SET[k]);
  if (changed.length === 0) throw new Error('every sysctl already had its value before init: the check proves nothing');
  return `br_netfilter and overlay loaded (loadable modules); ${Object.entries(SET).map(([k, v]) => `${k}=${v}`).join(', ')} (before: ${changed.map((k) => `${k}=${before[k]}`).join(', ')})`;
});

/** Checks that the collector acknowledged exactly the reported events of these JSON-lines outputs, each once, in order. */
function deliveredExactly(collected, printed, label) {
  const expected = printed.filter((e) => e.type !== 'step.output');
  const acked = collected.filter((r) => r.status === 204 && r.event?.runid === expected[0].runId);
  const ids = acked.map((r) => r.event.id);
  const dup = ids.find((id, i) => ids.indexOf(id) !== i);
  if (dup) throw new Error(`${label}: ${dup} was acknowledged twice`);
  const missing = expected.filter((e) => !ids.includes(e.id)).map((e) => e.id);
  if (missing.length) throw new Error(`${label}: ${missing.length} events never reached the collector: ${missing.slice(0, 5).join(', ')}`);
  const extra = ids.filter((id) => !expected.some((e) => e.id === id));
  if (extra.length) throw new Error(`${label}: the collector got events machineadm did not report: ${extra.slice(0, 5).join(', ')}`);
  const outOfOrder = ids.findIndex((id, i) => i > 0 && seqOf(id) <= seqOf(ids[i - 1]));
  if (outOfOrder > 0) throw new Error(`${label}: ${ids[outOfOrder]} arrived after ${ids[outOfOrder - 1]}`);
  for (const r of acked) {
    const e = r.event;
    const printedEvent = expected.find((x) => x.id === e.id);
    if (r.contentType !== 'application/cloudevents+json' || e.specversion !== '1.0' || e.type !== `io.machineadm.${e.data.type}` || e.instanceid !== INSTANCE_ID || e.nodename !== INSTANCE_ID) {
      throw new Error(`${label}: ${e.id} is not the CloudEvent the contract describes: ${JSON.stringify({ ...e, data: undefined })}`);
    }
    if (JSON.stringify(e.data) !== JSON.stringify(printedEvent)) throw new Error(`${label}: ${e.id} differs from the event machineadm printed`);
  }
  return acked.length;
}

check('the collector got every event of the init run exactly once, in order, across the reboot', () => {
  const part1 = jsonLines(join(resumed, 'vmtest', 'init.jsonl'));
  const printed = [...part1, ...jsonLines(join(resumed, 'vmtest', 'resume.out'))];
  const down = need(join(run, 'collector-init.jsonl')).trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
  if (down.length === 0) throw new Error('no event was even tried while the collector was down: the spool was not exercised');
  const part1Ids = new Set(part1.map((e) => e.id));
  const stray = down.find((r) => !part1Ids.has(r.event?.id));
  if (stray) throw new Error(`while the collector was down it got ${stray.event?.id}, not an event of the part before the reboot`);
  const collected = need(join(run, 'collector-resume.jsonl')).trim().split('\n').map((l) => JSON.parse(l));
  const n = deliveredExactly(collected, printed, 'init');
  const spooled = printed.filter((e) => part1Ids.has(e.id) && e.type !== 'step.output').length;
  return `${n} CloudEvents, ids in order, none twice, each the event machineadm printed; ${spooled} of them from before the reboot, spooled while the collector answered 503 (${down.length} tries refused)`;
});

check('reset gave the guest back as it was before init', () => {
  const exit = need(join(reset, 'vmtest', 'reset.exit')).trim();
  if (exit !== '0') throw new Error(`machineadm reset exited with ${exit}`);
  const before = manifestLines(join(reset, 'vmtest', 'before.manifest'));
  const afterInit = manifestLines(join(reset, 'vmtest', 'after-init.manifest'));
  const afterReset = manifestLines(join(reset, 'vmtest', 'after-reset.manifest'));
  const diff = (a, b) => [...a].filter((l) => !b.has(l));
  const changedByInit = [...new Set([...diff(afterInit, before), ...diff(before, afterInit)].map((l) => l.split(/\s+/).find((w) => w.startsWith('/'))))];
  for (const path of ['/etc/modules-load.d/machineadm.conf', '/etc/sysctl.d/90-machineadm.conf', '/etc/kubernetes/kubelet.conf', '/etc/vmtest/written-by-machineadm.conf', '/etc/containerd/config.toml']) {
    if (!changedByInit.includes(path)) throw new Error(`init did not change ${path}: the comparison would prove nothing`);
  }
  const gone = diff(before, afterReset);
  const added = diff(afterReset, before);
  if (gone.length || added.length) {
    throw new Error(`differs from before init:\n${[...gone.map((l) => `  - ${l}`), ...added.map((l) => `  + ${l}`)].slice(0, 40).join('\n')}`);
  }
  const sysBefore = sysctls(join(reset, 'vmtest', 'before.sysctl'));
  const sysAfter = sysctls(join(reset, 'vmtest', 'after-reset.sysctl'));
  for (const [k, v] of Object.entries(sysBefore)) if (v !== 'absent' && sysAfter[k] !== v) throw new Error(`${k} is ${sysAfter[k]} after reset, ${v} before init`);
  const dirs = need(join(reset, 'vmtest', 'after-reset.statedirs')).trim();
  if (!/^\/var\/lib\/machineadm\.reset-\d{8}T\d{6}Z$/.test(dirs)) throw new Error(`state directories after reset: ${JSON.stringify(dirs)}, expected only the archived one`);
  const undone = json(join(reset, 'vmtest', 'reset-result.json')).phases.flatMap((p) => p.steps);
  for (const id of ['reset/kubeadm/join', 'reset/files', 'reset/sysctls/apply', 'reset/containerd/restart']) {
    if (undone.find((s) => s.id === id)?.result !== 'success') throw new Error(`reset's ${id} did not succeed: ${JSON.stringify(undone.find((s) => s.id === id))}`);
  }
  const printed = jsonLines(join(reset, 'vmtest', 'reset.jsonl'));
  const n = deliveredExactly(need(join(run, 'collector-reset.jsonl')).trim().split('\n').map((l) => JSON.parse(l)), printed, 'reset');
  return `${before.size} manifest lines (entries, modes, owners, sha256) equal before init and after reset; init had changed ${changedByInit.length} paths; reset's kubeadm, files, sysctls and containerd steps succeeded; the sysctls read as before; state dir archived as ${dirs}; ${n} reset events delivered once, in order`;
});

let failed = 0;
for (const { name, fn } of checks) {
  try {
    console.log(`ok   ${name}\n     ${fn()}`);
  } catch (error) {
    failed += 1;
    console.log(`FAIL ${name}\n     ${error.message}`);
  }
}
if (failed) {
  console.log(`vm: ${failed} of ${checks.length} checks failed (files in ${run})`);
  process.exit(1);
}
