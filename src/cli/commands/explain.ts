// explain FIELD: one field of MachineConfig described from the schema (kubectl explain's layout).
import type { Command } from 'commander';
import { Option } from 'commander';
import type { Io } from '../io.ts';
import { ExitCode, UsageError } from '../../errors.ts';

export function registerExplainCommand(program: Command, io: Io, setExit: (code: number) => void): void {
  program
    .command('explain')
    .description('describe a configuration field: its type, default, example and fields')
    .argument('[field]', 'a dotted field path such as spec.kubernetes.node.taints (a map key as its name or *)')
    .option('-r, --recursive', 'list every field below, not only the next level')
    .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json', 'yaml']).default('text'))
    .addHelpText('after', '\nExamples:\n  $ machineadm explain spec.kubernetes.node.taints\n  $ machineadm explain spec.containerd.registries.docker.io.mirrors\n  $ machineadm explain spec --recursive\n')
    .action(async (path: string | undefined, options: { recursive?: boolean; output: 'text' | 'json' | 'yaml' }) => {
      const [{ machineConfigJsonSchema }, { findField, renderExplain }, { suggest }] = await Promise.all([
        import('../../config/schema/index.ts'),
        import('../../config/schema/explain.ts'),
        import('../../config/schema/dsl.ts'),
      ]);
      const root = machineConfigJsonSchema();
      const found = findField(root, path ?? '');
      if (!('field' in found)) {
        const where = found.known || 'MachineConfig';
        throw new UsageError(`explain ${path}: ${where} has no field "${found.missing}"`, {
          hint: found.children.length ? `${suggest(found.missing, found.children) ?? ''} its fields: ${found.children.join(', ')}`.trim() : `${where} has no fields below it`,
        });
      }
      if (options.output === 'text') io.stdout(renderExplain(root, found.field, options.recursive));
      else {
        const { allFields } = await import('../../config/schema/fields.ts');
        const below = options.recursive ? { fields: allFields(root).filter((f) => f.path.startsWith(found.field.path ? `${found.field.path}.` : '')) } : {};
        const data = { ...found.field, ...below };
        io.stdout(options.output === 'json' ? JSON.stringify(data, null, 2) + '\n' : (await import('js-yaml')).dump(data, { lineWidth: 120, noRefs: true }));
      }
      setExit(ExitCode.ok);
    });
}
