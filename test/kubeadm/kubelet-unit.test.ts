// What the kubelet's unit runs once systemd has read every drop-in after machineadm's 10-kubeadm.conf.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { execStartPrograms, laterExecStarts, renderKubeadmDropIn, renderKubeletUnit } from '../../src/kubeadm/kubelet-unit.ts';
import { scratchDir } from '../support/tmp.ts';

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
