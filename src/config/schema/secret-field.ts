// The schema of a secret field: a literal, or where the secret is read from when the step that
// needs it runs (a file, a variable, a cloud's secret store as the machine itself, or an age
// envelope), marked for every reader (x-secret) and never quoted by a rule that rejects it.
import { either, object, optional, string, truncate, type FieldDoc, type ParseContext, type Schema, type StringOptions } from './dsl.ts';
import { filePathProblem } from './file-content.ts';
import { networkUrlProblem } from './url.ts';

export interface AwsSecretsManagerReference {
  secretId: string;
  jsonKey?: string;
  region?: string;
  endpoint?: string;
  caFile?: string;
}
export interface AwsParameterStoreReference {
  name: string;
  region?: string;
  endpoint?: string;
  caFile?: string;
}
export interface AzureKeyVaultReference {
  vault?: string;
  name: string;
  version?: string;
  clientId?: string;
  caFile?: string;
}
export interface GcpSecretManagerReference {
  secret: string;
  version?: string;
  project?: string;
  endpoint?: string;
  caFile?: string;
}
export interface AgeReference {
  armor?: string;
  file?: string;
  url?: string;
  caFile?: string;
  identity?: string;
}

/** Where a secret is read from: exactly one of these. */
export type SecretReference =
  | { file: string }
  | { env: string }
  | { awsSecretsManager: AwsSecretsManagerReference }
  | { awsParameterStore: AwsParameterStoreReference }
  | { azureKeyVault: AzureKeyVaultReference }
  | { gcpSecretManager: GcpSecretManagerReference }
  | { age: AgeReference };

export type SecretReferenceKind = 'file' | 'env' | 'awsSecretsManager' | 'awsParameterStore' | 'azureKeyVault' | 'gcpSecretManager' | 'age';
export const SECRET_REFERENCE_KINDS: readonly SecretReferenceKind[] = ['file', 'env', 'awsSecretsManager', 'awsParameterStore', 'azureKeyVault', 'gcpSecretManager', 'age'];

/** A secret: a literal, or `{ valueFrom: <one reference> }`. */
export type SecretSource = string | { valueFrom: SecretReference };

/** Which kind of reference a source is (undefined for a literal). */
export function referenceKind(source: SecretSource): SecretReferenceKind | undefined {
  return typeof source === 'string' ? undefined : (Object.keys(source.valueFrom)[0] as SecretReferenceKind);
}

const machineFile = (description: string, example: string) => string({ minLength: 1, check: filePathProblem, description, example });

function httpsEndpoint(description: string, example: string) {
  return string({
    minLength: 1,
    description,
    example,
    check: (value) => {
      const unparsable = networkUrlProblem(value);
      if (unparsable) return unparsable;
      if (!/^https:\/\//i.test(value)) return 'must be an https:// URL|a secret store is only reached over TLS, e.g. https://secretsmanager.eu-west-1.amazonaws.com';
      const url = new URL(value);
      if (url.username || url.password || url.search) return 'must not hold user info or a query|the machine authenticates as itself; give the bare URL of the service';
      return undefined;
    },
  });
}

const caFile = optional(machineFile('a PEM CA bundle on the machine trusted for this service in addition to the system CAs (a private endpoint)', '/etc/ssl/site-ca.pem'));
const region = optional(string({ pattern: /^[a-z]{2}(-[a-z]+)+-\d+$/, patternHint: 'an AWS region, e.g. eu-west-1', description: 'the AWS region of the store (default: the instance\'s own region, from its metadata)', example: 'eu-west-1' }));
// The names each service accepts, so that a typo is found before the run instead of by the service.
const awsSecretId = string({ pattern: /^[A-Za-z0-9/_+=.@:-]{1,2048}$/, patternHint: 'a secret\'s name or ARN (letters, digits and /_+=.@:-)', description: 'the secret\'s name or ARN', example: 'prod/cluster-a/join-token' });
const awsParameterName = string({ pattern: /^[A-Za-z0-9/_.:-]{1,2048}$/, patternHint: 'a parameter\'s name or ARN, e.g. /cluster-a/join-token', description: 'the parameter\'s name (a SecureString is decrypted) or ARN', example: '/cluster-a/join-token' });

const awsSecretsManager = object(
  {
    secretId: awsSecretId,
    jsonKey: optional(string({ minLength: 1, description: 'the key whose string value is the secret, when the secret holds a JSON object', example: 'password' })),
    region,
    endpoint: optional(httpsEndpoint('the service\'s URL (a VPC endpoint, FIPS); default https://secretsmanager.REGION.amazonaws.com', 'https://vpce-0a1b2c.secretsmanager.eu-west-1.vpce.amazonaws.com')),
    caFile,
  },
  { description: 'AWS Secrets Manager (GetSecretValue), signed as the instance role from IMDSv2', example: { secretId: 'prod/cluster-a/join-token' } },
);
const awsParameterStore = object(
  { name: awsParameterName, region, endpoint: optional(httpsEndpoint('the service\'s URL; default https://ssm.REGION.amazonaws.com', 'https://ssm.eu-west-1.amazonaws.com')), caFile },
  { description: 'AWS Systems Manager Parameter Store (GetParameter WithDecryption), signed as the instance role from IMDSv2', example: { name: '/cluster-a/join-token' } },
);
const azureKeyVault = object(
  {
    vault: optional(
      string({
        pattern: /^([A-Za-z][A-Za-z0-9-]{1,22}[A-Za-z0-9]|https:\/\/\S+)$/,
        patternHint: 'a vault\'s name (3-24 letters, digits and dashes) or its https:// URL',
        description: 'the Key Vault: its name (https://NAME.vault.azure.net) or URL; default: the VM\'s tag "machineadm-key-vault", from its metadata',
        example: 'cluster-a-kv',
        check: (value) => (value.startsWith('https://') ? networkUrlProblem(value) : undefined),
      }),
    ),
    name: string({ pattern: /^[A-Za-z0-9-]{1,127}$/, patternHint: 'a Key Vault secret name: letters, digits and dashes', description: 'the secret\'s name', example: 'join-token' }),
    version: optional(string({ pattern: /^[A-Za-z0-9]{1,64}$/, patternHint: 'the version id Key Vault shows (32 hex digits)', description: 'the secret\'s version (default: the current one)', example: '0123456789abcdef0123456789abcdef' })),
    clientId: optional(string({ pattern: /^[0-9a-fA-F-]{36}$/, patternHint: 'a GUID', description: 'the client id of a user-assigned managed identity (default: the system-assigned one)', example: '00000000-0000-0000-0000-000000000000' })),
    caFile,
  },
  { description: 'Azure Key Vault (secrets/NAME), with a managed identity token from the instance metadata service', example: { vault: 'cluster-a-kv', name: 'join-token' } },
);
const gcpSecretManager = object(
  {
    secret: string({ pattern: /^[A-Za-z0-9_-]{1,255}$/, patternHint: 'a secret\'s id: letters, digits, _ and -', description: 'the secret\'s id', example: 'join-token' }),
    version: optional(string({ pattern: /^(latest|[1-9][0-9]*)$/, patternHint: '"latest" or a version number', description: 'the version (default: latest)', example: '3' })),
    project: optional(string({ pattern: /^[a-z0-9][a-z0-9.:-]{4,62}$/, patternHint: 'a project id (or number)', description: 'the project (default: the instance\'s own, from its metadata)', example: 'cluster-a-prod' })),
    endpoint: optional(httpsEndpoint('the service\'s URL (a regional endpoint); default https://secretmanager.googleapis.com', 'https://secretmanager.europe-west1.rep.googleapis.com')),
    caFile,
  },
  { description: 'Google Cloud Secret Manager (versions/VERSION:access), with the metadata server\'s service-account token', example: { secret: 'join-token' } },
);
const ARMOR_BEGIN = '-----BEGIN AGE ENCRYPTED FILE-----';
const age = object(
  {
    armor: optional(
      string({
        description: 'the age-encrypted value in ASCII armor (machineadm seal, or age -a, prints it)',
        example: `${ARMOR_BEGIN}\n...\n-----END AGE ENCRYPTED FILE-----\n`,
        check: (value) => (value.trimStart().startsWith(ARMOR_BEGIN) ? undefined : `does not start with "${ARMOR_BEGIN}"|give the whole output of machineadm seal (or age -a)`),
      }),
    ),
    file: optional(machineFile('a file on the machine holding the age-encrypted value (armored or binary)', '/etc/machineadm/join-token.age')),
    url: optional(
      string({
        minLength: 1,
        description: 'an http(s) URL the age-encrypted value is downloaded from when the step runs',
        example: 'https://config.example/cluster-a/join-token.age',
        check: (value) => networkUrlProblem(value) ?? (/^https?:\/\//i.test(value) ? undefined : 'must be an http:// or https:// URL|or give the value inline (armor) or as a file'),
      }),
    ),
    caFile,
    identity: optional(machineFile('the age identity file that decrypts it (mode 0600, baked into the image); default /etc/machineadm/age-identity.txt (C:\\ProgramData\\machineadm\\age-identity.txt on Windows)', '/etc/machineadm/age-identity.txt')),
  },
  {
    check: (v, report) => {
      const given = [v.armor, v.file, v.url].filter((x) => x !== undefined).length;
      if (given !== 1) report([], 'give exactly one of armor, file or url');
      if (v.caFile !== undefined && v.url === undefined) report('caFile', 'applies only to url', 'leave it out, or give the value as url');
    },
    description: 'an age-encrypted value, decrypted with an identity file on the machine',
    example: { file: '/etc/machineadm/join-token.age' },
  },
);

/** `{ valueFrom: <one reference> }`: where a secret is read from, never the secret itself. */
export const secretReference = object({
  valueFrom: object(
    {
      file: optional(string({ minLength: 1, description: 'absolute path of a file holding the secret', example: '/etc/machineadm/secret' })),
      env: optional(string({ pattern: /^[A-Za-z_][A-Za-z0-9_]*$/, description: 'name of an environment variable holding the secret', example: 'MACHINEADM_SECRET' })),
      awsSecretsManager: optional(awsSecretsManager),
      awsParameterStore: optional(awsParameterStore),
      azureKeyVault: optional(azureKeyVault),
      gcpSecretManager: optional(gcpSecretManager),
      age: optional(age),
    },
    {
      check: (v, report) => {
        if (Object.keys(v).length !== 1) report([], `give exactly one of ${SECRET_REFERENCE_KINDS.join(', ')}`);
      },
      description: 'where the secret is read from when the step that needs it runs: a file, an environment variable, a cloud secret store (as the machine itself) or an age envelope (exactly one)',
      example: { file: '/etc/machineadm/secret' },
    },
  ),
});

export function secret(options: FieldDoc & Omit<StringOptions, 'format'> = {}): Schema<SecretSource> {
  const { description, example, ...literal } = options;
  const common: FieldDoc = { ...(description === undefined ? {} : { description }), ...(example === undefined ? {} : { example }) };
  const schema = either<string, { valueFrom: Record<string, unknown> }>(string({ minLength: 1, ...literal }), secretReference, {
    ...common,
    pick: (value) => (typeof value === 'string' ? 'a' : 'b'),
  });
  // x-secret tells readers of the JSON Schema (and redaction) that the value is never shown.
  return {
    ...(schema as Schema<SecretSource>),
    secret: true,
    // A rule on a literal (pattern, check) must never quote the value it rejects.
    parse: (value, path, ctx) => {
      const inner: ParseContext = { issues: [], partial: ctx.partial };
      const parsed = schema.parse(value, path, inner);
      const hide = typeof value === 'string' && value !== '' ? [value, JSON.stringify(value), JSON.stringify(truncate(value))] : [];
      const clean = (text: string) => hide.reduce((t, h) => t.split(h).join('<redacted>'), text);
      for (const found of inner.issues) ctx.issues.push({ ...found, message: clean(found.message), ...(found.hint !== undefined ? { hint: clean(found.hint) } : {}) });
      return parsed as SecretSource | undefined;
    },
    json: (mode) => ({ ...schema.json(mode), 'x-secret': true }),
  };
}
