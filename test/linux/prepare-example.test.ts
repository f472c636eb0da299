// `machineadm prepare -c examples/linux-worker.yaml --root <scratch>` writes the modules-load,
// sysctl, containerd config.toml and hosts.toml files; run again, every step is skipped. Prints the
// time of the whole prepare phase (on a scratch root: live changes are skipped there).
import { describe, expect, it } from 'vitest';
import { readFileSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from '@iarna/toml';
import { scratchDir } from '../support/tmp.ts';
import { runCli } from '../support/cli.ts';

const EXAMPLE = join(import.meta.dirname, '..', '..', 'examples', 'linux-worker.yaml');

interface Event {
  type: string;
  step?: string;
  phase?: string;
  result?: string;
  message?: string;
  durationMs?: number;
}

async function prepareJson(root: string): Promise<{ code: number; events: Event[]; wallMs: number; stderr: string }> {
  const started = performance.now();
  const { code, stdout, stderr } = await runCli(['prepare', '-c', EXAMPLE, '--root', root, '-o', 'json']);
  const wallMs = performance.now() - started;
  return { code, stderr, wallMs, events: stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Event) };
}

describe('machineadm prepare with examples/linux-worker.yaml on a scratch root', () => {
  const root = scratchDir('machineadm-example-');
  const planRoot = scratchDir('machineadm-example-plan-');

  it('writes the modules-load, sysctl, containerd and hosts.toml files, and a second run skips every step', async () => {
    const first = await prepareJson(root);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    for (const path of [
      'etc/modules-load.d/machineadm.conf',
      'etc/sysctl.d/90-machineadm.conf',
      'etc/containerd/config.toml',
      'etc/containerd/certs.d/docker.io/hosts.toml',
      'etc/containerd/certs.d/registry.internal.example:5000/hosts.toml',
      'etc/systemd/system/containerd.service.d/machineadm-proxy.conf',
      'etc/crictl.yaml',
    ]) {
      expect(existsSync(join(root, path)), path).toBe(true);
    }
    expect(readFileSync(join(root, 'etc/modules-load.d/machineadm.conf'), 'utf8')).toMatch(/^overlay\nbr_netfilter\n$/m);
    expect(readFileSync(join(root, 'etc/sysctl.d/90-machineadm.conf'), 'utf8')).toContain('net.ipv4.ip_forward = 1\n');
    const config = parse(readFileSync(join(root, 'etc/containerd/config.toml'), 'utf8')) as Record<string, any>;
    expect(config.debug.format).toBe('json');
    const hosts = parse(readFileSync(join(root, 'etc/containerd/certs.d/docker.io/hosts.toml'), 'utf8')) as Record<string, any>;
    expect(Object.keys(hosts.host)).toEqual(['https://mirror.internal.example:5000']);
    const live = first.events.filter((e) => e.type === 'step.finished' && e.result === 'skipped');
    expect(live.map((e) => e.step).sort()).toEqual(['prepare/containerd/restart', 'prepare/kernel-modules/load', 'prepare/sysctls/apply']);
    for (const e of live) expect(e.message).toBe(`live change skipped under --root ${root}`);

    const second = await prepareJson(root);
    expect(second.code).toBe(0);
    const steps = second.events.filter((e) => e.type === 'step.finished');
    expect(steps).toHaveLength(9);
    expect(steps.filter((e) => e.result !== 'skipped')).toEqual([]);
    const phase = (r: typeof first) => r.events.find((e) => e.type === 'phase.finished' && e.phase === 'prepare')?.durationMs;
    console.log(`prepare phase on examples/linux-worker.yaml (scratch root): first run ${phase(first)} ms (main() ${first.wallMs.toFixed(0)} ms), second run ${phase(second)} ms (main() ${second.wallMs.toFixed(0)} ms)`);
  });

  // A negative oom_score needs CAP_SYS_RESOURCE: containerd logs "permission denied" for it in an
  // unprivileged container, where people try the examples first.
  it.each(readdirSync(join(EXAMPLE, '..')).filter((f) => f.endsWith('.yaml')))('%s asks containerd for nothing an unprivileged container refuses', async (name) => {
    const viewed = await runCli(['config', 'view', '-c', join(EXAMPLE, '..', name), '-o', 'json']);
    expect(viewed.code, viewed.stderr).toBe(0);
    const extra = (JSON.parse(viewed.stdout) as { spec: { containerd?: { extraConfig?: string } } }).spec.containerd?.extraConfig ?? '';
    const settings = parse(extra) as Record<string, unknown>;
    expect(typeof settings.oom_score === 'number' && settings.oom_score < 0, `${name}: oom_score = ${String(settings.oom_score)}`).toBe(false);
  });

  it('says in the plan which containerd config version it chose and why', async () => {
    const plan = await runCli(['plan', '-c', EXAMPLE, '--root', planRoot, '--only', 'prepare/containerd']);
    expect(plan.code).toBe(0);
    expect(plan.stdout).toMatch(/create \/etc\/containerd\/config\.toml \(config version [23] for containerd \S+ \((installed|from spec\.containerd\.version)\)/);
    expect(plan.stdout).toContain('restart containerd');
  });
});
