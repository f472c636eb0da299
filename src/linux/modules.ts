// Kernel modules as machineadm handles them: the modules-load.d file and how to tell that a module
// is already in the kernel. Pure.

export const MODULES_FILE = '/etc/modules-load.d/machineadm.conf';

export function renderModulesFile(modules: readonly string[]): string {
  return ['# Written by machineadm from spec.kernelModules; changes here are overwritten on its next run.', ...modules].join('\n') + '\n';
}

/**
 * Paths whose presence shows a module is in the running kernel. /sys/module/<name> is there for
 * every loaded module and for built-in ones with parameters; a built-in module without parameters
 * has no entry, so for the modules Kubernetes nodes need the files they create are accepted too.
 */
export function moduleEvidence(name: string): string[] {
  const sysName = name.replace(/-/g, '_');
  const extra: Record<string, string[]> = {
    br_netfilter: ['/proc/sys/net/bridge/bridge-nf-call-iptables'],
    ip_vs: ['/proc/net/ip_vs'],
    nf_conntrack: ['/proc/sys/net/netfilter/nf_conntrack_max'],
  };
  return [`/sys/module/${sysName}`, ...(extra[sysName] ?? [])];
}

/** Built-in modules listed by the kernel build (modules.builtin holds paths like kernel/net/bridge/br_netfilter.ko). */
export function builtinModules(modulesBuiltin: string): Set<string> {
  const names = new Set<string>();
  for (const line of modulesBuiltin.split('\n')) {
    const base = line.trim().split('/').pop();
    if (base) names.add(base.replace(/\.ko(\.\w+)?$/, '').replace(/-/g, '_'));
  }
  return names;
}
