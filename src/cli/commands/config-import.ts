// config import: a Cluster API kubeadm object (KubeadmConfig, KubeadmConfigTemplate,
// KubeadmControlPlane, KubeadmControlPlaneTemplate) as a MachineConfig on stdout; notes on stderr.
import type { Command } from 'commander';
import { Option } from 'commander';
import { resolve } from 'node:path';
import type { Io } from '../io.ts';
import { ConfigError, ExitCode, UsageError } from '../../errors.ts';

/** A KubeadmConfig is text of some kilobytes; a larger file is not one. */
const MAX_INPUT_BYTES = 4 * 1024 * 1024;

interface ImportCommandOptions {
  file: string;
  output?: 'yaml' | 'json';
  join?: boolean;
  os?: 'linux' | 'windows';
  secrets: 'files' | 'aws' | 'azure' | 'gcp';
  secretsDir?: string;
}

async function readInput(file: string, io: Io): Promise<Buffer> {
  if (file === '-') return io.readStdin(MAX_INPUT_BYTES);
  // This machine's file, as -c reads one (not under --root: the object comes from the operator).
  const { createConfigHost } = await import('../../host/config-host.ts');
  const host = createConfigHost({ root: '/', offline: true, env: io.env });
  const read = await host.local.readSmallFile(resolve(io.cwd, file), MAX_INPUT_BYTES).catch((cause: Error) => {
    throw new ConfigError([{ source: file, path: '', message: `cannot be read: ${cause.message}`, unreadable: true }]);
  });
  if ('bytes' in read) return read.bytes;
  const why = { missing: 'does not exist', 'not-a-file': 'is not a regular file', 'too-large': `is larger than ${MAX_INPUT_BYTES / 1024 / 1024} MiB: not a KubeadmConfig` }[read.problem];
  throw new ConfigError([{ source: file, path: '', message: why, ...(read.problem === 'too-large' ? {} : { unreadable: true as const }) }]);
}

export function registerImportCommand(config: Command, io: Io, setExit: (code: number) => void): void {
  config
    .command('import')
    .description('write the MachineConfig equivalent to a Cluster API KubeadmConfig, KubeadmConfigTemplate, KubeadmControlPlane or KubeadmControlPlaneTemplate (exit 2 when a field has no equivalent)')
    .requiredOption('-f, --file <path>', 'the Cluster API object as YAML or JSON ("-" reads standard input)')
    .addOption(new Option('-o, --output <format>', 'output format').choices(['yaml', 'json']).default('yaml'))
    .option('--join', 'a joining member: a KubeadmControlPlane\'s further machines, or the join half of a KubeadmConfig that has both')
    .addOption(new Option('--secrets <store>', 'where the values of the Kubernetes Secrets the object reads (files[].contentFrom, users[].passwdFrom) come from on the machine: files under --secrets-dir, or the cloud\'s secret store').choices(['files', 'aws', 'azure', 'gcp']).default('files'))
    .option('--secrets-dir <dir>', 'with --secrets files: the directory holding <Secret name>/<key> on the machine (default /etc/machineadm/capi-secrets, or C:\\ProgramData\\machineadm\\capi-secrets on Windows)')
    .addOption(new Option('--os <os>', 'the machine\'s operating system (default: Windows when the object names containerd\'s named pipe or C:\\ paths)').choices(['linux', 'windows']))
    .addHelpText(
      'after',
      '\nPer-machine values Cluster API fills in are read from the environment when machineadm runs:\n' +
        '  MACHINEADM_CAPI_ENDPOINT (host:port), MACHINEADM_CAPI_TOKEN, MACHINEADM_CAPI_CA_CERT_HASH, MACHINEADM_CAPI_CERTIFICATE_KEY\n' +
        '\nExamples:\n  $ machineadm config import -f kubeadmconfigtemplate.yaml > worker.yaml\n  $ machineadm config import -f kcp.yaml --join -o json\n' +
        '\nA Kubernetes Secret the object reads is read on the machine, never carried in the bootstrap data:\n' +
          '  --secrets files: <dir>/<Secret name>/<key>; aws: Secrets Manager secret <name>, JSON key <key>;\n' +
          '  azure: Key Vault secret <name>--<key>; gcp: Secret Manager secret <name>__<key> (a note says where each goes)\n' +
          '\nThe mapping, field by field: docs/recipes/cluster-api/switching-from-cabpk.md\n',
    )
    .action(async (options: ImportCommandOptions) => {
      const [{ parseDocument, decodeUtf8, DocumentError }, { importClusterApi }, { dump }] = await Promise.all([import('../../config/document.ts'), import('../../capi/import.ts'), import('js-yaml')]);
      const source = options.file === '-' ? 'stdin' : options.file;
      let value: unknown;
      try {
        value = parseDocument(decodeUtf8(await readInput(options.file, io), source), source)?.value;
      } catch (error) {
        if (error instanceof DocumentError) throw new ConfigError(error.issues);
        throw error;
      }
      if (options.secretsDir !== undefined && !/^(\/|[A-Za-z]:\\)/.test(options.secretsDir)) throw new UsageError(`--secrets-dir ${options.secretsDir}: give an absolute path on the machine`);
      if (options.secretsDir !== undefined && options.secrets !== 'files') throw new UsageError('--secrets-dir applies only to --secrets files');
      const secrets = { store: options.secrets, ...(options.secretsDir !== undefined ? { dir: options.secretsDir } : {}) };
      const result = importClusterApi(value, { source, secrets, ...(options.join ? { join: true } : {}), ...(options.os ? { os: options.os } : {}) });
      for (const note of result.notes) io.stderr(`note: ${note.path}: ${note.message}\n`);
      io.stdout(options.output === 'json' ? JSON.stringify(result.config, null, 2) + '\n' : dump(result.config, { lineWidth: -1, noRefs: true }));
      setExit(ExitCode.ok);
    });
}
