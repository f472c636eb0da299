// config validate | view | schema. The loader, the schema and YAML are loaded when a command runs.
import { Option, type Command } from 'commander';
import type { Io } from '../io.ts';
import { addConfigOptions, addOfflineOption, addOutputOption, addRootOption, addStateDirOption, type CommonOptions } from '../options.ts';
import { parseSet } from './phases.ts';
import { resolve } from 'node:path';
import type { LoadOptions } from '../../config/load.ts';
import type { ConfigHost } from '../../host/config-host.ts';
import { ConfigError, ExitCode, UsageError } from '../../errors.ts';
import { registerImportCommand } from './config-import.ts';

function loadOptions(io: Io): LoadOptions {
  return { readStdin: (maxBytes) => io.readStdin(maxBytes), cwd: io.cwd };
}

// Only what reading the configuration uses of the machine (see createConfigHost).
async function configHost(options: CommonOptions, io: Io): Promise<ConfigHost> {
  const { createConfigHost } = await import('../../host/config-host.ts');
  return createConfigHost({ root: resolve(io.cwd, options.root), offline: options.offline ?? false, env: io.env });
}

// Reading the configuration needs its sources, the root (default sources and machine files live
// under it) and --offline (network sources are refused); no state, so no --state-dir.
const configOptions = (command: Command, io: Io): Command =>
  addOutputOption(addOfflineOption(addRootOption(addConfigOptions(command), io), 'refuse configuration sources that need the network'));

export function registerConfigCommands(program: Command, io: Io, setExit: (code: number) => void): void {
  const config = program.command('config').description('validate, view or describe the configuration');
  config.addHelpText(
    'after',
    '\nExamples:\n  $ machineadm config validate -c node.yaml -c /etc/machineadm/config.d/\n' +
      '  $ machineadm config view -c "https://config.example/node.yaml#sha256=<hex>&ca=/etc/pki/site-ca.pem" -c ./override.yaml\n' +
      '  $ machineadm config view -c imds://user-data        # or imds://aws/user-data, imds://azure/user-data, imds://gce/user-data\n' +
      '  $ cat node.yaml | machineadm config validate -c - -o json\n' +
      '\nSources, merge rules and the error format: docs/contract.md, section 3.\n',
  );

  addStateDirOption(configOptions(config.command('validate').description('check the configuration and list every problem (exit 2 when invalid)'), io))
    .option('--on-machine', "also run the run's preflight against this machine (under --root): its secrets, files and kubeadm's leftovers; exit 2 or 3 as init would, nothing changed")
    .option('--set <name=value>', 'with --on-machine: a machine value given instead of read (repeatable)', parseSet)
    .option('--devices', 'with --on-machine and --root: also check the block devices spec.storage names')
    .addHelpText('after', '\nExample:\n  $ machineadm config validate -c node.yaml -o json\n  $ machineadm config validate -c /etc/machineadm/config.yaml --on-machine\n')
    .action(async (options: CommonOptions & { onMachine?: boolean; set?: string[]; devices?: boolean }) => {
      if (options.onMachine) {
        const { runPhaseCommand } = await import('./phase-run.ts');
        try {
          setExit(await runPhaseCommand('plan', { ...options, set: options.set ?? [], validateOnly: true }, io));
        } catch (error) {
          if (!(error instanceof ConfigError) || options.output === 'text') throw error;
          const { renderData } = await import('../data-output.ts');
          io.stdout(await renderData(options.output, { valid: false, onMachine: true, issues: error.issues }));
          setExit(error.exitCode);
        }
        return;
      }
      if (options.stateDir !== undefined || options.set !== undefined || options.devices) throw new UsageError('--state-dir, --set and --devices go with --on-machine', { hint: 'without it, validate checks the configuration alone' });
      const [{ loadConfig, NoMachineConfigError }, host, { renderData }] = await Promise.all([import('../../config/load.ts'), configHost(options, io), import('../data-output.ts')]);
      try {
        const { sources } = await loadConfig(host, options.config ?? [], loadOptions(io));
        io.stdout(options.output !== 'text' ? await renderData(options.output, { valid: true, sources, issues: [] }) : `configuration is valid (${sources.join(', ')})\n`);
        setExit(ExitCode.ok);
      } catch (error) {
        if (error instanceof NoMachineConfigError) {
          io.stdout(options.output !== 'text' ? await renderData(options.output, { valid: true, optedIn: false, sources: [], issues: [], message: error.message }) : `${error.message}\n`);
          setExit(ExitCode.ok);
          return;
        }
        if (!(error instanceof ConfigError) || options.output === 'text') throw error;
        io.stdout(await renderData(options.output, { valid: false, issues: error.issues }));
        setExit(ExitCode.usage);
      }
    });

  configOptions(config.command('view').description('print the effective (merged) configuration, secrets redacted'), io)
    .addHelpText('after', '\nExample:\n  $ machineadm config view -c https://config.example/node.yaml#sha256=<hex> -c ./override.yaml\n')
    .action(async (options: CommonOptions) => {
      const [{ loadConfig, NoMachineConfigError }, host, { redactConfig }, { dump }] = await Promise.all([
        import('../../config/load.ts'),
        configHost(options, io),
        import('../../config/redact.ts'),
        import('js-yaml'),
      ]);
      let loaded;
      try {
        ({ config: loaded } = await loadConfig(host, options.config ?? [], loadOptions(io)));
      } catch (error) {
        if (!(error instanceof NoMachineConfigError)) throw error;
        io.stderr(`${error.message}\n`);
        setExit(ExitCode.ok);
        return;
      }
      const redacted = redactConfig(loaded);
      // text and yaml: the configuration as it is written, in YAML.
      io.stdout(options.output === 'json' ? JSON.stringify(redacted, null, 2) + '\n' : dump(redacted, { lineWidth: 120, noRefs: true }));
      setExit(ExitCode.ok);
    });

  registerImportCommand(config, io, setExit);

  config
    .command('print-defaults')
    .description('print a valid MachineConfig with the default of every field that has one')
    .addOption(new Option('-o, --output <format>', 'output format').choices(['yaml', 'json']).default('yaml'))
    .addHelpText('after', '\nExample:\n  $ machineadm config print-defaults > /etc/machineadm/config.yaml\n')
    .action(async (options: { output: 'yaml' | 'json' }) => {
      const [{ machineConfigJsonSchema }, { defaultMachineConfig, renderDefaults }] = await Promise.all([import('../../config/schema/index.ts'), import('../../config/schema/explain.ts')]);
      const root = machineConfigJsonSchema();
      io.stdout(options.output === 'json' ? JSON.stringify(defaultMachineConfig(root), null, 2) + '\n' : renderDefaults(root));
      setExit(ExitCode.ok);
    });

  config
    .command('schema')
    .description('print the JSON Schema of MachineConfig')
    .option('--drop-in', 'the schema of one source merged with others (a config.d drop-in): no field is required but apiVersion and kind')
    .addHelpText('after', '\nExample:\n  $ machineadm config schema > machineconfig.schema.json\n  $ machineadm config schema --drop-in > machineconfig-dropin.schema.json\n')
    .action(async (options: { dropIn?: boolean }) => {
      const { machineConfigJsonSchema, machineConfigDropInJsonSchema } = await import('../../config/schema/index.ts');
      io.stdout(JSON.stringify(options.dropIn ? machineConfigDropInJsonSchema() : machineConfigJsonSchema(), null, 2) + '\n');
      setExit(ExitCode.ok);
    });
}
