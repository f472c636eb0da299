// A template's test of CABPK's init or join files (which machineadm does not write) is answered at
// import for the machine the import is for, and the script still runs under the real shell.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { answerRoleTests } from '../../src/capi/role-tests.ts';
import { importClusterApi } from '../../src/capi/import.ts';

// As the Azure, Nutanix, Equinix, vSphere and Proxmox templates write them.
const TESTS: Array<[string, boolean]> = [
  ['[ -f /run/kubeadm/kubeadm.yaml ]', true],
  ['[ -f "/run/kubeadm/kubeadm.yaml" ]', true],
  ['[[ -f /run/kubeadm/kubeadm.yaml ]]', true],
  ['[ -f /tmp/kubeadm.yaml ] || [ -f /run/kubeadm/kubeadm.yaml ]', true],
  ['[ -f /tmp/kubeadm-join-config.yaml ] || [ -f /run/kubeadm/kubeadm-join-config.yaml ]', false],
  ['test -e /run/kubeadm/kubeadm-join-config.yaml', false],
  ['[[ -f /etc/kubeadm.sh ]] && grep -q -e "kubeadm init" /etc/kubeadm.sh', true],
];

const shell = (script: string): string => execFileSync('bash', ['-c', script], { encoding: 'utf8' });

describe("a template's test of CABPK's kubeadm files", () => {
  it.each(TESTS)('%s is answered for init and for join, and bash runs the result', (test, onInit) => {
    for (const bootstrap of ['init', 'join'] as const) {
      const line = `if ${test}; then echo yes; else echo no; fi`;
      const answered = answerRoleTests(line, bootstrap);
      expect(answered).toBeDefined();
      expect(answered).not.toMatch(/kubeadm(-join-config)?\.yaml|kubeadm\.sh/);
      expect(shell(answered!).trim()).toBe(onInit === (bootstrap === 'init') ? 'yes' : 'no');
    }
  });

  it('leaves other lines alone, and a real edit of the file to the refusal', () => {
    expect(answerRoleTests('[ -f /etc/kubernetes/admin.conf ] && echo x', 'init')).toBeUndefined();
    const doc = {
      apiVersion: 'controlplane.cluster.x-k8s.io/v1beta1',
      kind: 'KubeadmControlPlane',
      metadata: { name: 'cp' },
      spec: {
        version: 'v1.31.2',
        kubeadmConfigSpec: {
          preKubeadmCommands: ['if [ -f /run/kubeadm/kubeadm.yaml ]; then sed -i "s#admin.conf#super-admin.conf#" /etc/kubernetes/manifests/kube-vip.yaml; fi'],
          postKubeadmCommands: ['if [ -f /run/kubeadm/kubeadm.yaml ]; then sed -i "s#super-admin.conf#admin.conf#" /etc/kubernetes/manifests/kube-vip.yaml; fi'],
          files: [{ path: '/etc/pre-kubeadm-commands/10-kube-vip.sh', permissions: '0700', content: '#!/bin/bash\nif [[ -f /run/kubeadm/kubeadm.yaml ]]; then\n  echo swap\nfi\n' }],
        },
      },
    };
    const { config, notes } = importClusterApi(doc, { source: 'test' });
    const spec = config.spec as Record<string, any>;
    expect(spec.commands.beforeKubeadm[0].shell).toContain('if true; then sed -i "s#admin.conf#super-admin.conf#"');
    expect(spec.commands.afterKubeadm[0].shell).toContain('if true; then sed -i "s#super-admin.conf#admin.conf#"');
    expect(spec.files[0].content).toBe('#!/bin/bash\nif true; then\n  echo swap\nfi\n');
    expect(notes.filter((n) => n.message.startsWith('tells init from join')).map((n) => n.path)).toEqual(['spec.kubeadmConfigSpec.preKubeadmCommands[0]', 'spec.kubeadmConfigSpec.postKubeadmCommands[0]', 'spec.kubeadmConfigSpec.files[0].content']);
    const joining = importClusterApi(doc, { source: 'test', join: true });
    expect((joining.config.spec as Record<string, any>).commands.beforeKubeadm[0].shell).toContain('if false; then');
    doc.spec.kubeadmConfigSpec.preKubeadmCommands.push("sed -i 's/x/y/' /run/kubeadm/kubeadm.yaml");
    expect(() => importClusterApi(doc, { source: 'test' })).toThrow(/preKubeadmCommands\[1\]: works on \/run\/kubeadm\/kubeadm\.yaml/);
  });
});
