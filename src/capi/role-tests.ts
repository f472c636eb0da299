// Templates tell the first control plane from a joining machine by a file only CABPK writes: the
// kubeadm configuration (/run/kubeadm/kubeadm.yaml on init, kubeadm-join-config.yaml on join; /tmp/
// in older releases) or Ignition's kubeadm.sh, which says "kubeadm init" on init. machineadm writes
// none of them, and one import is for one of the two: such a test becomes `true` or `false`, what it
// would have been on this machine.
const FILE_TEST = /\[\[?\s+-[fe]\s+(["']?)(?:\/run\/kubeadm|\/tmp)\/kubeadm(-join-config)?\.yaml\1\s+\]\]?|\btest\s+-[fe]\s+(["']?)(?:\/run\/kubeadm|\/tmp)\/kubeadm(-join-config)?\.yaml\3(?=[\s;)&|]|$)/g;
const SCRIPT_TEST = /\[\[?\s+-[fe]\s+(["']?)\/etc\/kubeadm\.sh\1\s+\]\]?\s*&&\s*grep\s+-q\s+(?:-e\s+)?(["'])kubeadm init\2\s+\/etc\/kubeadm\.sh/g;

/** The shell text with its tests of CABPK's init or join files answered for `bootstrap`, or undefined when it has none. */
export function answerRoleTests(text: string, bootstrap: 'init' | 'join'): string | undefined {
  const answer = (joinFile: boolean): string => String(joinFile === (bootstrap === 'join'));
  const out = text
    .replace(FILE_TEST, (_all, _q1: string, join1: string | undefined, _q3: string, join3: string | undefined) => answer((join1 ?? join3) !== undefined))
    .replace(SCRIPT_TEST, () => answer(false));
  return out === text ? undefined : out;
}

export function roleTestNote(bootstrap: 'init' | 'join'): string {
  return `tells init from join by a file only CABPK writes (its kubeadm configuration, or kubeadm.sh): imported for a machine that runs kubeadm ${bootstrap}, the test is answered as it would be there`;
}
