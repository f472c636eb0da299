// The golden cases of the containerd renderers: test/golden/containerd/<case>/ holds input.yaml (a
// spec.containerd section), facts.json (containerdVersion, kernelRelease) and expected/<machine path>.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { load } from 'js-yaml';
import { parseWith, formatPath } from '../../src/config/schema/dsl.ts';
import { containerdSection } from '../../src/config/schema/containerd.ts';
import type { ContainerdSpec } from '../../src/config/schema/index.ts';
import { renderContainerdFiles, type ContainerdFiles } from '../../src/containerd/files.ts';
import type { TargetFacts } from '../../src/containerd/target.ts';

export const GOLDEN_DIR = join(import.meta.dirname, '..', 'golden', 'containerd');

export interface GoldenCase {
  name: string;
  dir: string;
  spec: ContainerdSpec;
  facts: TargetFacts;
}

export function parseSpec(value: unknown, where: string): ContainerdSpec {
  const { value: spec, issues } = parseWith(containerdSection, value ?? {});
  if (!spec) throw new Error(`${where}: invalid spec.containerd: ${issues.map((i) => `${formatPath(i.path)}: ${i.message}`).join('; ')}`);
  return spec;
}

export function goldenCases(): GoldenCase[] {
  return readdirSync(GOLDEN_DIR)
    .filter((name) => statSync(join(GOLDEN_DIR, name)).isDirectory())
    .sort()
    .map((name) => {
      const dir = join(GOLDEN_DIR, name);
      const spec = parseSpec(load(readFileSync(join(dir, 'input.yaml'), 'utf8')), `${name}/input.yaml`);
      const facts = JSON.parse(readFileSync(join(dir, 'facts.json'), 'utf8')) as TargetFacts;
      return { name, dir, spec, facts };
    });
}

/** Machine path -> content, for every file the renderers produce. */
export function renderedFiles(files: ContainerdFiles): Map<string, string> {
  const out = new Map<string, string>();
  for (const f of [files.config, ...files.hosts, files.caBundle, files.proxy]) if (f) out.set(f.path, f.content);
  return out;
}

export function renderCase(c: GoldenCase): { files: ContainerdFiles; byPath: Map<string, string> } {
  const files = renderContainerdFiles(c.spec, c.facts);
  return { files, byPath: renderedFiles(files) };
}

/** Every file under expected/, as machine paths. */
export function expectedFiles(dir: string): Map<string, string> {
  const root = join(dir, 'expected');
  const out = new Map<string, string>();
  const walk = (d: string) => {
    let names: string[] = [];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else out.set('/' + relative(root, p), readFileSync(p, 'utf8'));
    }
  };
  walk(root);
  return out;
}
