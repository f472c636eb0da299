// What `plan -o json` says a run would do, held against what `init` then does, for each Linux
// example that runs without a network: on a fresh scratch --root, every path init creates, changes
// or removes is named by a planned change with the matching action, every planned file change
// happens, a step skipped as live-only changes nothing, and afterwards neither plan nor a second
// init finds anything left to do.
import { chmodSync, copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Plan } from '../../src/engine/runner.ts';
import { runCli } from '../support/cli.ts';
import { missingRequirement } from '../support/environment.ts';
import { standinEnv } from '../support/machine-run.ts';
import { scratchDir } from '../support/tmp.ts';
import { snapshotTree, type TreeSnapshot } from '../support/tree.ts';
import { imdsHandler, startHttp, type Cloud } from '../config/helpers/servers.ts';
import { FLEET_MACHINES } from '../config/helpers/fleet-metadata.ts';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

// Rewritten by every run (files.md): the record of the run, not a change the plan is about.
const REPORT_FILES = new Set(['/run/machineadm/result.json', '/run/machineadm/status.json']);
// A planned `run kubeadm init|join ...` stands for what kubeadm itself writes: its kubeconfigs,
// certificates and static pod manifests under /etc/kubernetes, the kubelet's configuration under
// /var/lib/kubelet. machineadm does not name those files (kubeadm decides them), so a path there is
// covered by that line; a path machineadm writes there itself (a static pod of
// provision/kubeadm/static-pods) is still named by its own change and checked as such.
const KUBEADM_OUTPUTS = ['/etc/kubernetes', '/var/lib/kubelet'];
// The account files the shadow tools rewrite (with their `-` backups) for a planned `create user`.
const ACCOUNT_FILES = ['/etc/passwd', '/etc/group', '/etc/shadow', '/etc/gshadow'];
// The steps docs/contract/steps.md says are skipped under a scratch --root (live changes, devices,
// the operator's commands), and the sentinel that is then not written.
const LIVE_ONLY = /^(live change skipped under --root |device change skipped under --root |commands change the live machine: not run under --root |not applicable: )/;
const SENTINEL_NOT_DUE = /^(provision\/commands\/[\w-]+ did not run, so the machine is not provisioned|the configuration has no spec\.kubernetes)/;

type Diff = Map<string, 'created' | 'changed' | 'removed'>;

function diff(before: TreeSnapshot, after: TreeSnapshot): Diff {
  const out: Diff = new Map();
  for (const name of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (name === '.') continue;
    const path = `/${name}`;
    if (!(name in before)) out.set(path, 'created');
    else if (!(name in after)) out.set(path, 'removed');
    else if (before[name] !== after[name]) out.set(path, 'changed');
  }
  return out;
}

const steps = (plan: Plan) => plan.phases.flatMap((p) => p.steps);
const under = (path: string, dir: string) => path === dir || path.startsWith(`${dir}/`);

/** What init must have done, by path, from the steps the plan says will change something. */
function expectedFromPlan(plan: Plan): { expected: Map<string, 'created' | 'changed' | 'removed' | 'gone'>; kubeadm: boolean; homes: string[] } {
  const expected = new Map<string, 'created' | 'changed' | 'removed' | 'gone'>();
  let kubeadm = false;
  const homes: string[] = [];
  for (const step of steps(plan).filter((s) => s.status === 'change')) {
    for (const c of step.changes) {
      if (c.action === 'run' && /^kubeadm (init|join) /.test(c.target)) kubeadm = true;
      else if (c.action === 'create' && c.target.startsWith('user ')) {
        const home = /home (\/\S+?),/.exec(c.detail ?? '')?.[1];
        expect(home, `${step.id}: ${c.target} names no home`).toBeTruthy();
        homes.push(home!);
        for (const f of ACCOUNT_FILES) expected.set(f, 'changed');
      } else if (c.target.startsWith('/')) {
        // `write`: kubeadm's configuration and patches, removed once kubeadm ran (steps.md, section 7).
        const kind = { create: 'created', update: 'changed', delete: 'removed', write: 'gone' } as const;
        const k = kind[c.action as keyof typeof kind];
        expect(k, `${step.id}: no rule for the action "${c.action}" of ${c.target}`).toBeDefined();
        expected.set(c.target, k);
      }
    }
  }
  return { expected, kubeadm, homes };
}

interface Example {
  name: string;
  /** What the machine holds before the run: the secrets the example reads, the accounts it changes. */
  setup?: (root: string) => void;
  cloud?: Cloud;
  env?: Record<string, string>;
  skip?: string;
}

function secrets(files: Record<string, string>) {
  return (root: string) => {
    mkdirSync(join(root, 'etc/machineadm'), { recursive: true });
    for (const [name, value] of Object.entries(files)) {
      writeFileSync(join(root, 'etc/machineadm', name), `${value}\n`);
      chmodSync(join(root, 'etc/machineadm', name), 0o600);
    }
  };
}
const TOKEN = 'abcdef.0123456789abcdef';
const CERT_KEY = '0123456789abcdef'.repeat(4);

const EXAMPLES: Example[] = [
  { name: 'quickstart' },
  { name: 'linux-worker', setup: secrets({ 'bootstrap-token': TOKEN }) },
  { name: 'control-plane-init', setup: secrets({ 'bootstrap-token': TOKEN, 'certificate-key': CERT_KEY }) },
  { name: 'control-plane-join', setup: secrets({ 'certificate-key': CERT_KEY }), env: { MACHINEADM_BOOTSTRAP_TOKEN: TOKEN } },
  { name: 'etcd-disk' },
  {
    name: 'host-setup',
    setup: (root) => {
      mkdirSync(join(root, 'etc'), { recursive: true });
      for (const f of ['passwd', 'group', 'shadow', 'gshadow']) copyFileSync(`/etc/${f}`, join(root, 'etc', f));
    },
    skip: missingRequirement({ root: true, commands: ['useradd', 'usermod', 'groupadd', 'chpasswd', 'visudo'] }),
  },
  ...(['aws', 'azure', 'gce'] as const).map((cloud) => ({ name: `fleet-${cloud}`, cloud, setup: secrets({ token: TOKEN }) })),
];

describe('plan -o json against init on the Linux examples, each on a fresh scratch --root', () => {
  it.for(EXAMPLES)('$name: init changes exactly what the plan lists; then plan has nothing left and a second init changes only the report', async (example, { skip }) => {
    if (example.skip) skip(example.skip);
    const dir = scratchDir(`machineadm-plan-init-${example.name}-`);
    const root = join(dir, 'root');
    mkdirSync(root);
    example.setup?.(root);
    const server = example.cloud ? await startHttp(imdsHandler(example.cloud, FLEET_MACHINES[example.cloud])) : undefined;
    try {
      const env = standinEnv({ ...example.env, ...(server ? { MACHINEADM_IMDS_ENDPOINT: server.url } : {}) });
      const args = ['-c', join(REPO, 'examples', `${example.name}.yaml`), '--root', root, '--state-dir', join(dir, 'state')];
      const planOf = async () => {
        const run = await runCli(['plan', ...args, '-o', 'json'], { env, cwd: REPO });
        expect(run.stderr).toBe('');
        expect(run.code).toBe(0);
        return JSON.parse(run.stdout) as Plan;
      };
      const init = async () => {
        const run = await runCli(['init', ...args, '-o', 'json'], { env, cwd: REPO });
        expect(run.stderr).toBe('');
        expect(run.code).toBe(0);
      };

      const s0 = snapshotTree(root);
      const plan = await planOf();
      expect(diff(s0, snapshotTree(root)), 'plan changed the root').toEqual(new Map());
      expect(steps(plan).some((s) => s.status === 'change')).toBe(true);
      for (const s of steps(plan).filter((s) => s.status === 'skipped')) {
        expect(LIVE_ONLY.test(s.reason ?? '') || (s.id === 'report/sentinel' && SENTINEL_NOT_DUE.test(s.reason ?? '')), `${s.id} skipped for a reason the contract does not give for a scratch --root: ${s.reason}`).toBe(true);
      }

      await init();
      const s1 = snapshotTree(root);
      const done = diff(s0, s1);
      const { expected, kubeadm, homes } = expectedFromPlan(plan);

      // Every planned file change happened, as planned.
      const outcome = (path: string, kind: string) => (kind === 'gone' ? (s1[path.slice(1)] === undefined ? 'gone' : 'still there') : done.get(path) ?? 'untouched');
      const missed = [...expected].filter(([path, kind]) => outcome(path, kind) !== kind);
      expect(missed.map(([path, kind]) => `${kind} ${path}: ${outcome(path, kind)}`), 'planned changes init did not make').toEqual([]);

      // Every change init made was planned (or is a report file, kubeadm's own output, a parent
      // directory of one of those, or the shadow tools' work for a planned user).
      const covered = (path: string, kind: string): boolean => {
        if (REPORT_FILES.has(path)) return true;
        if (expected.get(path) === kind) return true;
        if (kubeadm && KUBEADM_OUTPUTS.some((d) => under(path, d))) return true;
        if (ACCOUNT_FILES.some((f) => path === `${f}-`) && expected.has(path.slice(0, -1))) return true;
        if (homes.some((h) => path === h) && kind === 'created') return true;
        return false;
      };
      const explained = new Set([...done].filter(([path, kind]) => covered(path, kind)).map(([path]) => path));
      const parentOfExplained = (path: string) => [...explained].some((p) => p.startsWith(`${path}/`));
      const unplanned = [...done].filter(([path, kind]) => !explained.has(path) && !(kind === 'created' && s1[path.slice(1)]?.startsWith('dir ') && parentOfExplained(path)));
      expect(unplanned.map(([path, kind]) => `${kind} ${path}`), 'changes init made that the plan did not list').toEqual([]);

      // A step skipped as live-only changed none of the paths it lists.
      const skippedTargets = steps(plan)
        .filter((s) => s.status === 'skipped')
        .flatMap((s) => s.changes.map((c) => c.target))
        .filter((t) => t.startsWith('/') && done.has(t));
      expect(skippedTargets, 'paths of skipped steps that init changed').toEqual([]);

      // Nothing left to do: the same steps, each planned change now up to date, the live-only ones
      // still skipped for the same reason. Two settle otherwise, as steps.md says: before-kubeadm's
      // commands are done once kubeadm has joined, and the sentinel then names the next command
      // step that did not run.
      const again = await planOf();
      const settled = (s: Plan['phases'][number]['steps'][number]): string => {
        if (s.status === 'change') return 'up-to-date';
        if (s.status !== 'skipped') return s.status;
        if (kubeadm && s.id === 'provision/commands/before-kubeadm') return 'up-to-date';
        if (s.id === 'report/sentinel') return 'skipped: the sentinel is not due';
        return `skipped: ${s.reason}`;
      };
      const shape = (s: Plan['phases'][number]['steps'][number]): string =>
        `${s.id} ${s.status === 'skipped' ? (s.id === 'report/sentinel' && SENTINEL_NOT_DUE.test(s.reason ?? '') ? 'skipped: the sentinel is not due' : `skipped: ${s.reason}`) : s.status}`;
      expect(steps(again).map(shape), 'what a plan after init still finds to do').toEqual(steps(plan).map((s) => `${s.id} ${settled(s)}`));

      await init();
      expect([...diff(s1, snapshotTree(root))].filter(([path]) => !REPORT_FILES.has(path)), 'a second init changed more than the report').toEqual([]);
    } finally {
      await server?.close();
    }
  });
});
