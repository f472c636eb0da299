// What the kubelet's unit runs once systemd has read every drop-in after machineadm's 10-kubeadm.conf.
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { execStartPrograms, laterExecStarts, renderKubeadmDropIn, renderKubeletUnit } from '../../src/kubeadm/kubelet-unit.ts';
import { scratchDir } from '../support/tmp.ts';
import { runCli } from '../support/cli.ts';
import { missingRequirement } from '../support/environment.ts';
import { killedAtRename, traceUntil } from '../support/killed-run.ts';
import { ownReport, snapshot } from '../reset/machine.ts';

const KUBELET = '/opt/bin/kubelet';
const reset = (program: string) => `[Service]\nExecStart=\nExecStart=${program} $KUBELET_EXTRA_ARGS\n`;

describe('laterExecStarts', () => {
  it.each([
    ['no other drop-in', []],
    ['a later drop-in that sets only the environment', [{ path: '/etc/systemd/system/kubelet.service.d/20-env.conf', text: '[Service]\nEnvironment="KUBELET_EXTRA_ARGS=--v=2"\n' }]],
    ['an earlier drop-in with a program of its own (10-kubeadm.conf empties the list after it)', [{ path: '/usr/lib/systemd/system/kubelet.service.d/05-old.conf', text: reset('/usr/bin/kubelet') }]],
    ['a later drop-in that runs the same kubelet', [{ path: '/etc/systemd/system/kubelet.service.d/20-flags.conf', text: reset(KUBELET) }]],
    ['a later drop-in hidden by one of the same name in /etc', [{ path: '/usr/lib/systemd/system/kubelet.service.d/kubeadm.conf', text: reset('/usr/bin/kubelet') }, { path: '/etc/systemd/system/kubelet.service.d/kubeadm.conf', text: '' }]],
    ['ExecStart in a section other than [Service]', [{ path: '/etc/systemd/system/kubelet.service.d/20-x.conf', text: '[Unit]\nExecStart=/usr/bin/kubelet\n' }]],
  ])('finds nothing with %s', (_what, dropIns) => {
    expect(laterExecStarts(dropIns, KUBELET)).toBeUndefined();
  });

  it.each([
    ["Fedora's kubeadm.conf", { path: '/usr/lib/systemd/system/kubelet.service.d/kubeadm.conf', text: reset('/usr/bin/kubelet') }, ['/usr/bin/kubelet']],
    ['a later ExecStart= that empties the list', { path: '/etc/systemd/system/kubelet.service.d/20-x.conf', text: '[Service]\nExecStart=\n' }, []],
    ['a second ExecStart= without emptying the list', { path: '/run/systemd/system/kubelet.service.d/20-x.conf', text: `[Service]\nExecStart=${KUBELET}\n` }, [KUBELET, KUBELET]],
    ['a quoted program with a prefix, on continued lines', { path: '/etc/systemd/system/kubelet.service.d/90-wrap.conf', text: '[Service]\nExecStart=\nExecStart=-"/usr/local/sbin/wrap" \\\n  /opt/bin/kubelet\n' }, ['/usr/local/sbin/wrap']],
  ])('names %s and what the unit would run', (_what, dropIn, runs) => {
    expect(laterExecStarts([dropIn], KUBELET)).toEqual({ paths: [dropIn.path], runs });
  });
});

describe('execStartPrograms', () => {
  it('reads ExecStart with spaces around the equals sign', () => {
    expect(execStartPrograms('[Service]\nExecStart = \nExecStart = @/usr/bin/kubelet kubelet\n')).toEqual(['', '/usr/bin/kubelet']);
  });
});

describe('renderKubeletUnit and renderKubeadmDropIn', () => {
  // What systemd would read otherwise: %n is the unit's name (a quote or backslash it refuses in a
  // program's name, and so does spec.kubernetes.install.directory).
  it.each(['/opt/k8s%nbin', '/opt/k8s%%bin', '/opt/k8s${HOME}bin'])('name a kubelet in %s so that systemd-analyze verify finds it there', (directory) => {
    const dir = scratchDir('machineadm-kubelet-unit-');
    mkdirSync(join(dir, 'units/kubelet.service.d'), { recursive: true });
    const kubelet = join(dir, directory, 'kubelet');
    mkdirSync(join(dir, directory), { recursive: true });
    writeFileSync(kubelet, '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(join(dir, 'units/kubelet.service'), renderKubeletUnit(kubelet));
    writeFileSync(join(dir, 'units/kubelet.service.d/10-kubeadm.conf'), renderKubeadmDropIn(kubelet));
    const verify = spawnSync('systemd-analyze', ['verify', join(dir, 'units/kubelet.service')], { encoding: 'utf8' });
    expect(verify.stdout + verify.stderr).toBe('');
  });
});

describe('prepare/kubernetes/kubelet-unit killed after enabling the kubelet', () => {
  const skip = missingRequirement({ commands: ['strace'] });
  const LINK = 'etc/systemd/system/multi-user.target.wants/kubelet.service';

  function machine(dir: string) {
    const m = { root: join(dir, 'root'), state: join(dir, 'state'), config: join(dir, 'machine.yaml') };
    for (const d of ['etc', 'run']) mkdirSync(join(m.root, d), { recursive: true });
    const spec = { kubernetes: { version: 'v1.31.2', controlPlaneEndpoint: '10.0.0.10:6443', token: 'abcdef.0123456789abcdef', caCertHashes: [`sha256:${'ab'.repeat(32)}`], install: { baseUrl: 'http://127.0.0.1:9/release' } }, report: { clusterAPISentinel: false } };
    writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec }));
    return m;
  }
  const prepare = (m: ReturnType<typeof machine>) => ['prepare', '-c', m.config, '--root', m.root, '--state-dir', m.state, '--only', 'prepare/kubernetes/kubelet-unit'];

  it.skipIf(skip)('is disabled by reset although the run was killed before it recorded the link, and the next run found it done', async () => {
    const dir = scratchDir('machineadm-kubelet-unit-killed-');
    const traced = machine(join(dir, 'traced'));
    const found = traceUntil(prepare(traced), (line) => line.includes(` rename(`) && line.includes(`, "${join(traced.root, LINK)}")`), join(dir, 'trace'));
    // The kill comes on the first rename after the link's: the state file's that records the step's
    // end, or a status file's before it; either way before the record.
    const linked = (m: ReturnType<typeof machine>) => existsSync(join(m.root, LINK)) || lstatSync(join(m.root, LINK), { throwIfNoEntry: false })?.isSymbolicLink() === true;
    const recorded = (m: ReturnType<typeof machine>) => {
      const state = join(m.state, 'state.json');
      return existsSync(state) && (JSON.parse(readFileSync(state, 'utf8')) as { steps: Record<string, unknown> }).steps['prepare/kubernetes/kubelet-unit'] !== undefined;
    };
    // The renames of the status file under /run go by the clock: on a slow machine the count may
    // move by one or two, and the kill is moved after it until it lands between link and record.
    let m = machine(join(dir, 'killed-0'));
    let before = snapshot(m.root);
    let at = found.killAt;
    for (let attempt = 1; !(linked(m) && !recorded(m)) && attempt <= 6; attempt++) {
      m = machine(join(dir, `killed-${attempt}`));
      before = snapshot(m.root);
      expect(killedAtRename(prepare(m), at)).toBe('SIGKILL');
      if (!linked(m)) at += 1;
      else if (recorded(m)) at -= 1;
    }
    expect(lstatSync(join(m.root, LINK)).isSymbolicLink()).toBe(true);
    expect(recorded(m)).toBe(false);

    const again = await runCli(prepare(m));
    expect(again.code, again.stdout + again.stderr).toBe(0);
    const reset = await runCli(['reset', '--root', m.root, '--state-dir', m.state]);
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(() => lstatSync(join(m.root, LINK))).toThrow();
    expect(snapshot(m.root, ownReport)).toEqual(before);
  });
});
