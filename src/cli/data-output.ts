// -o json and -o yaml: the same data in either notation. js-yaml is loaded only for YAML.
export async function renderData(format: 'json' | 'yaml', data: unknown, options: { compactJson?: boolean } = {}): Promise<string> {
  if (format === 'json') return JSON.stringify(data, null, options.compactJson ? undefined : 2) + '\n';
  const { dump } = await import('js-yaml');
  return dump(data, { lineWidth: -1, noRefs: true });
}
