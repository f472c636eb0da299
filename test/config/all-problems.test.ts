// "Every problem at once": a source that does not parse does not hide the other sources' problems,
// and a field error does not hide the cross-field and role rules of the merged configuration.
// Each problem carries its source and line.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';

const dir = scratchDir('machineadm-all-problems-');
const HEAD = 'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\n';
const HASH = `sha256:${'ab'.repeat(32)}`;

// Line 4: a flow map that is never closed.
const broken = join(dir, '10-broken.yaml');
writeFileSync(broken, `${HEAD}spec:\n  sysctls: { net.ipv4.ip_forward: "1"\n  kernelModules: [overlay]\n`);

const node = join(dir, '20-node.yaml');
writeFileSync(
  node,
  `${HEAD}spec:
  containerd:
    cgroupDriver: sistemd
  kubernetes:
    role: worker
    bootstrap: join
    controlPlaneEndpoint: 10.0.0.10
    caCertHashes: ["${HASH}"]
    certificateKey: "${'cd'.repeat(32)}"
`,
);

const expected = [
  // the YAML syntax error of the first source
  new RegExp(`^  ${broken}:5:\\d+: not valid YAML or JSON`, 'm'),
  // a field error of the second source
  new RegExp(`^  ${node}:5:5: spec\\.containerd\\.cgroupDriver: "sistemd" is not one of`, 'm'),
  // a field error next to a cross-field problem in the same object
  new RegExp(`^  ${node}:9:5: spec\\.kubernetes\\.controlPlaneEndpoint: is not host:port`, 'm'),
  new RegExp(`^  ${node}:11:5: spec\\.kubernetes\\.certificateKey: only a control-plane machine uses a certificate key`, 'm'),
  // a field the role requires, missing from the merged configuration
  new RegExp(`^  ${node}:6:3: spec\\.kubernetes\\.token: is required to join[^]*?\\n    hint: .*checked without ${broken}`, 'm'),
];

describe('a configuration with problems in several sources and layers', () => {
  it.each([
    ['config validate', ['config', 'validate']],
    ['init', ['init', '--root', join(dir, 'root')]],
    ['plan', ['plan', '--root', join(dir, 'root')]],
  ])('%s reports every problem with its source and line, exit 2', async (_name, command) => {
    const result = await runCli([...command, '-c', broken, '-c', node]);
    expect(result.code).toBe(2);
    for (const line of expected) expect(result.stderr).toMatch(line);
    expect(result.stderr).toContain('invalid configuration (5 problems)');
    expect(existsSync(join(dir, 'root'))).toBe(false);
  });

  it('lists them by source, in the order given, and by line within each', async () => {
    const result = await runCli(['config', 'validate', '-o', 'json', '-c', broken, '-c', node]);
    const { issues } = JSON.parse(result.stdout) as { issues: { source: string; line: number; path: string }[] };
    expect(issues.map((i) => [i.source, i.line, i.path])).toEqual([
      [broken, 5, ''],
      [node, 5, 'spec.containerd.cgroupDriver'],
      [node, 6, 'spec.kubernetes.token'],
      [node, 9, 'spec.kubernetes.controlPlaneEndpoint'],
      [node, 11, 'spec.kubernetes.certificateKey'],
    ]);
  });

  it.each([
    ['a bootstrap token that is malformed does not also count as missing', `    token: "not-a-token"\n    controlPlaneEndpoint: 10.0.0.10:6443\n    caCertHashes: ["${HASH}"]\n`, 'spec.kubernetes.token', 'is not valid'],
    ['a misspelled role does not make init look wrong for a worker', `    role: control-plan\n    bootstrap: init\n`, 'spec.kubernetes.role', 'is not one of'],
  ])('%s', async (_name, fields, path, message) => {
    const file = join(dir, `${path}-${fields.length}.yaml`);
    writeFileSync(file, `${HEAD}spec:\n  kubernetes:\n${fields}`);
    const result = await runCli(['config', 'validate', '-o', 'json', '-c', file]);
    const { issues } = JSON.parse(result.stdout) as { issues: { path: string; message: string }[] };
    expect(issues.map((i) => i.path)).toEqual([path]);
    expect(issues[0]!.message).toContain(message);
  });
});
