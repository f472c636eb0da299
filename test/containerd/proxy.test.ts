// The proxy drop-in holds the proxy URLs for containerd as written: with a credential in one (a
// user, a password or a query) it is a secret file, like a mirror's hosts.toml.
import { describe, expect, it } from 'vitest';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { scratchDir } from '../support/tmp.ts';
import { runCli } from '../support/cli.ts';

const DROP_IN = 'etc/systemd/system/containerd.service.d/machineadm-proxy.conf';

describe('prepare/containerd/proxy', () => {
  const dir = scratchDir('machineadm-proxy-');

  it.each([
    ['a query', 'http://proxy.example:3128/?auth=p1'],
    ['a user and password', 'http://user:p1@proxy.example:3128'],
  ])('writes the drop-in with mode 0600 and shows no diff of it in the plan when a proxy URL holds %s', async (what, url) => {
    const root = join(dir, what.replace(/\W+/g, '-'));
    const path = join(dir, `${what.replace(/\W+/g, '-')}.yaml`);
    writeFileSync(path, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { containerd: { proxy: { httpsProxy: url } } } }));
    const plan = await runCli(['plan', '-c', path, '--root', root, '--only', 'prepare/containerd/proxy']);
    expect(plan.code).toBe(0);
    expect(plan.stdout).toContain(`create /${DROP_IN}`);
    expect(plan.stdout).toContain('mode 0600');
    expect(plan.stdout).not.toContain('HTTPS_PROXY');
    expect((await runCli(['prepare', '-c', path, '--root', root, '--only', 'prepare/containerd/proxy'])).code).toBe(0);
    expect(statSync(join(root, DROP_IN)).mode & 0o777).toBe(0o600);
  });
});
