// prepare/windows/firewall: an inbound rule for the kubelet's port (10250/TCP), under a fixed
// name so a rerun finds it (display names are localized; a rule made without -Name gets a random
// one). A rule of that name with other settings is replaced.
import type { Step, StepContext } from '../../engine/step.ts';
import type { FirewallRule } from '../../host/windows/index.ts';
import { KUBELET_FIREWALL_RULE, KUBELET_PORT, kubernetesNeeded } from '../paths.ts';
import { noSeamSkip, requireSeam, seamOf } from './seam.ts';
import { recordExisting, removeCreated } from './undo.ts';

export const KUBELET_RULE: FirewallRule = { name: KUBELET_FIREWALL_RULE, displayName: 'kubelet (machineadm)', protocol: 'TCP', localPort: KUBELET_PORT };

async function matches(ctx: StepContext): Promise<boolean> {
  const rule = await seamOf(ctx)?.firewallRule(KUBELET_RULE.name);
  return rule !== undefined && rule.enabled === 'True' && rule.direction === 'Inbound' && rule.action === 'Allow' && rule.protocol === KUBELET_RULE.protocol && rule.localPort === String(KUBELET_RULE.localPort);
}

export const kubeletFirewallStep: Step = {
  id: 'windows/firewall',
  summary: `allow the kubelet port ${KUBELET_PORT}/TCP inbound in Windows Firewall`,
  platforms: ['windows'],
  // No kubelet, no port to open.
  applies: kubernetesNeeded,
  undoRecord: recordExisting('rules', () => [KUBELET_RULE.name]),
  undo: removeCreated('rules', `remove the firewall rule ${KUBELET_RULE.name}, if machineadm added it`),
  async check(ctx) {
    if (await matches(ctx)) return { done: true, changes: [] };
    const skip = noSeamSkip(ctx);
    return { done: false, changes: [{ action: 'add', target: `firewall rule ${KUBELET_RULE.name}`, detail: `inbound ${KUBELET_RULE.protocol} ${KUBELET_RULE.localPort}, allow` }], ...(skip ? { skipReason: skip } : {}) };
  },
  async apply(ctx) {
    await requireSeam(ctx).addFirewallRule(KUBELET_RULE);
    ctx.log(`firewall rule ${KUBELET_RULE.name}: inbound ${KUBELET_RULE.protocol} ${KUBELET_RULE.localPort} allowed`);
  },
};
