// spec.files values: plain inline content with ${NAME} filled in from the machine (as cloud-init
// rendered a Cluster API template's {{ ds.meta_data.* }} into a file), once, and nothing else.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';

function machine(files: unknown[]) {
  const dir = scratchDir('machineadm-values-');
  const m = { root: join(dir, 'root'), state: join(dir, 'state'), config: join(dir, 'machine.yaml') };
  mkdirSync(join(m.root, 'etc'), { recursive: true });
  writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { files } }));
  const run = (command: string, ...set: string[]) => runCli([command, '-c', m.config, '--root', m.root, '--state-dir', m.state, '--only', 'prepare/files', ...set.flatMap((s) => ['--set', s])]);
  return { ...m, run };
}

const HOSTS = { path: '/etc/hosts', content: '127.0.1.1 ${MACHINE_LOCAL_HOSTNAME} ${MACHINE_LOCAL_HOSTNAME}.local\n', append: true, values: { MACHINE_LOCAL_HOSTNAME: { fromMachine: 'localHostname' } } };

describe('spec.files values', () => {
  it("writes the machine's value where the content names it, leaves any other ${...} as it is, and a rerun changes nothing", async () => {
    const m = machine([HOSTS, { path: '/etc/profile.d/node.sh', content: 'export NODE=${MACHINE_ZONE}\necho "${HOME}"\n', values: { MACHINE_ZONE: { fromMachine: 'zone' } } }]);
    writeFileSync(join(m.root, 'etc/hosts'), '127.0.0.1 localhost\n');
    const plan = await m.run('plan', 'localHostname=node-7', 'zone=zone-a');
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('+127.0.1.1 node-7 node-7.local');
    expect((await m.run('prepare', 'localHostname=node-7', 'zone=zone-a')).code).toBe(0);
    expect(readFileSync(join(m.root, 'etc/hosts'), 'utf8')).toBe('127.0.0.1 localhost\n127.0.1.1 node-7 node-7.local\n');
    expect(readFileSync(join(m.root, 'etc/profile.d/node.sh'), 'utf8')).toBe('export NODE=zone-a\necho "${HOME}"\n');
    const again = await m.run('prepare', 'localHostname=node-7', 'zone=zone-a');
    expect(again.code).toBe(0);
    expect(again.stdout + again.stderr).toMatch(/prepare\/files skipped .*already done/);
    expect(readFileSync(join(m.root, 'etc/hosts'), 'utf8')).toBe('127.0.0.1 localhost\n127.0.1.1 node-7 node-7.local\n');
  });

  it('fills each name once: a value that itself says ${NAME} is written as it is', async () => {
    const m = machine([{ path: '/etc/node.conf', content: 'a=${A}\nb=${B}\n', values: { A: '${B}', B: { fromMachine: 'zone' } } }]);
    expect((await m.run('prepare', 'zone=zone-a')).code).toBe(0);
    expect(readFileSync(join(m.root, 'etc/node.conf'), 'utf8')).toBe('a=${B}\nb=zone-a\n');
  });

  it.each([
    ['on encoded content', [{ path: '/etc/x', content: 'eHg=', encoding: 'base64', values: { A: 'b' } }], 'spec.files[0].values: apply only to plain inline content'],
    ['on a downloaded file', [{ path: '/etc/x', source: { url: 'https://files.example/x', sha256: 'a'.repeat(64) }, values: { A: 'b' } }], 'spec.files[0].values: apply only to plain inline content'],
    ['a name the content never uses', [{ path: '/etc/x', content: 'host=${HOST}\n', values: { HOST: 'h', ZONE: { fromMachine: 'zone' } } }], 'spec.files[0].values.ZONE: is not used: the content never says ${ZONE}'],
    ['a value of the machine it does not know', [{ path: '/etc/x', content: 'x=${X}\n', values: { X: { fromMachine: 'serialNumber' } } }], 'spec.files[0].values.X: takes a literal, { fromMachine: NAME }'],
  ])('refuses values %s in validation, exit 2', async (_, files, message) => {
    const m = machine(files);
    const out = await runCli(['config', 'validate', '-c', m.config]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain(message);
  });

  it('refuses a value from the machine that is not one word, naming the field and the source, before any change', async () => {
    const m = machine([HOSTS]);
    const out = await m.run('prepare', 'localHostname=-rf');
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('spec.files[0].values.MACHINE_LOCAL_HOSTNAME: localHostname from --set "-rf" starts with "-"');
    expect(() => readFileSync(join(m.root, 'etc/hosts'))).toThrow();
  });
});
