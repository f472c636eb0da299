// The examples whose secrets live in a secret store or an age envelope: their user data holds no
// secret (a reader of the instance metadata learns nothing), and each secret names where it is read.
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { secretFields } from '../../src/config/redact.ts';
import { referenceKind } from '../../src/config/schema/secret-field.ts';
import { runCli } from '../support/cli.ts';

const EXAMPLES: Record<string, string[]> = {
  'examples/aws-control-plane-init.yaml': ['awsSecretsManager', 'awsParameterStore'],
  'examples/aws-control-plane-join.yaml': ['awsSecretsManager', 'awsParameterStore'],
  'examples/azure-worker.yaml': ['azureKeyVault'],
  'examples/gcp-worker.yaml': ['gcpSecretManager'],
  'examples/age-worker.yaml': ['age'],
};

describe.each(Object.entries(EXAMPLES))('%s', (path, kinds) => {
  it('validates and holds no secret, only where each is read from', async () => {
    const validate = await runCli(['config', 'validate', '-c', path]);
    expect(validate.code, validate.stderr).toBe(0);
    // A CA certificate hash is marked secret but is public by nature (kubeadm prints it).
    const fields = secretFields(load(readFileSync(path, 'utf8'))).filter((f) => !f.field.includes('caCertHashes'));
    expect(fields.length).toBeGreaterThan(0);
    expect(fields.filter((f) => typeof f.source === 'string').map((f) => f.field)).toEqual([]);
    expect([...new Set(fields.map((f) => referenceKind(f.source)))].sort()).toEqual([...kinds].sort());
  });
});
