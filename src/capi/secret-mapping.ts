// Where a Kubernetes Secret that a KubeadmConfig reads (files[].contentFrom.secret,
// users[].passwdFrom.secret) comes from on the machine. Cluster API would copy its value into the
// bootstrap data, where every reader of instance metadata sees it; machineadm reads it on the
// machine instead, from one place per Secret key that the operator fills, by one convention:
//   files:  DIR/<Secret name>/<key>            (default DIR /etc/machineadm/capi-secrets, or
//                                               C:\ProgramData\machineadm\capi-secrets on Windows)
//   aws:    Secrets Manager secret <name>, a JSON object whose <key> holds the value (the
//           Secret's data as it is in Kubernetes)
//   azure:  Key Vault secret <name>--<key> (characters other than letters, digits and "-" as
//           "-"), in the vault the VM's tag machineadm-key-vault names
//   gcp:    Secret Manager secret <name>__<key> (characters other than letters, digits, "_" and
//           "-" as "_"), in the instance's project

export const SECRET_STORES = ['files', 'aws', 'azure', 'gcp'] as const;
export type SecretStore = (typeof SECRET_STORES)[number];

export const DEFAULT_SECRETS_DIR = { linux: '/etc/machineadm/capi-secrets', windows: 'C:\\ProgramData\\machineadm\\capi-secrets' } as const;

export interface SecretMapping {
  store: SecretStore;
  /** For files: the directory the Secrets' values are put under. */
  dir?: string;
}

/** The machineadm secret reference for one key of a Kubernetes Secret, and where it says the value goes. */
export function referenceForSecret(name: string, key: string, mapping: SecretMapping, os: 'linux' | 'windows'): { valueFrom: Record<string, unknown> } {
  switch (mapping.store) {
    case 'files': {
      const dir = (mapping.dir ?? DEFAULT_SECRETS_DIR[os]).replace(/[\\/]+$/, '');
      const sep = os === 'windows' ? '\\' : '/';
      return { valueFrom: { file: `${dir}${sep}${name}${sep}${key}` } };
    }
    case 'aws':
      return { valueFrom: { awsSecretsManager: { secretId: name, jsonKey: key } } };
    case 'azure':
      return { valueFrom: { azureKeyVault: { name: `${name}--${key}`.replace(/[^A-Za-z0-9-]/g, '-').slice(0, 127) } } };
    case 'gcp':
      return { valueFrom: { gcpSecretManager: { secret: `${name}__${key}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 255) } } };
  }
}

/** Where the operator puts the value, in words, for the import's notes. */
export function whereToPut(name: string, key: string, reference: { valueFrom: Record<string, unknown> }): string {
  const [kind, ref] = Object.entries(reference.valueFrom)[0] as [string, Record<string, string>];
  const what = `Secret ${name}, key ${key}`;
  if (kind === 'file') return `${what}: write its value to ${String(ref)} on the machine before machineadm runs (mode 0600; not through the user data)`;
  if (kind === 'awsSecretsManager') return `${what}: store it in AWS Secrets Manager as secret ${ref.secretId}, a JSON object with the key ${ref.jsonKey}; the instance role needs secretsmanager:GetSecretValue on it`;
  if (kind === 'azureKeyVault') return `${what}: store it in Azure Key Vault as secret ${ref.name}, in the vault the VM's tag machineadm-key-vault names; the VM's identity needs "Key Vault Secrets User"`;
  return `${what}: store it in Google Secret Manager as secret ${ref.secret} of the instance's project; its service account needs roles/secretmanager.secretAccessor`;
}
