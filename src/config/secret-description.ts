// Where a secret comes from, in words, for plans and errors: what an operator needs to see to
// know which store, key or identity a run will use, and never the secret itself.
import type { SecretSource } from './schema/secret-field.ts';
import { ageIdentityPath } from './secret-sources/limits.ts';
import { displayUrl } from '../redaction.ts';

export function describeSecretSource(source: SecretSource, os: 'linux' | 'windows'): string {
  if (typeof source === 'string') return 'written in the configuration (a literal: anyone who reads the configuration reads it)';
  const ref = source.valueFrom;
  if ('file' in ref) return `file ${ref.file}`;
  if ('env' in ref) return `environment variable ${ref.env}`;
  if ('awsSecretsManager' in ref) {
    const r = ref.awsSecretsManager;
    return `AWS Secrets Manager secret ${r.secretId}${r.jsonKey ? `, key ${r.jsonKey}` : ''} (${awsWhere(r)}), as the instance's IAM role`;
  }
  if ('awsParameterStore' in ref) return `AWS SSM parameter ${ref.awsParameterStore.name}, decrypted (${awsWhere(ref.awsParameterStore)}), as the instance's IAM role`;
  if ('azureKeyVault' in ref) {
    const r = ref.azureKeyVault;
    const vault = r.vault ?? 'the vault the VM\'s tag machineadm-key-vault names';
    return `Azure Key Vault ${vault}, secret ${r.name}${r.version ? ` version ${r.version}` : ''}, as the VM's ${r.clientId ? `user-assigned identity ${r.clientId}` : 'system-assigned identity'}`;
  }
  if ('gcpSecretManager' in ref) {
    const r = ref.gcpSecretManager;
    return `Google Secret Manager projects/${r.project ?? '(the instance\'s project)'}/secrets/${r.secret}/versions/${r.version ?? 'latest'}${r.endpoint ? ` at ${r.endpoint}` : ''}, as the instance's service account`;
  }
  const r = ref.age;
  const from = r.armor !== undefined ? 'given inline' : r.file !== undefined ? `in ${r.file}` : `downloaded from ${displayUrl(r.url ?? '')}`;
  return `age envelope ${from}, decrypted with the identity ${ageIdentityPath(r, os)}`;
}

function awsWhere(r: { region?: string | undefined; endpoint?: string | undefined }): string {
  return `${r.region ? `region ${r.region}` : 'the instance\'s region'}${r.endpoint ? `, at ${r.endpoint}` : ''}`;
}
