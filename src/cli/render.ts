// Text renderings of plans and run outcomes. JSON output prints the same data as it is.
import type { Plan } from '../engine/runner.ts';

const MARK = { change: '~', 'up-to-date': '=', skipped: '-', 'not-selected': ' ', 'not-applicable': ' ' } as const;

// Diff lines in colour, as git shows them: added green, removed red, hunk headers cyan.
const COLOR = { add: '\x1b[32m', remove: '\x1b[31m', hunk: '\x1b[36m', reset: '\x1b[0m' } as const;

function colorDiffLine(line: string): string {
  const color = line.startsWith('+') && !line.startsWith('+++') ? COLOR.add : line.startsWith('-') && !line.startsWith('---') ? COLOR.remove : line.startsWith('@@') ? COLOR.hunk : undefined;
  return color ? `${color}${line}${COLOR.reset}` : line;
}

/** `color`: for a terminal that shows colours (the caller decides: a TTY, and NO_COLOR unset). */
export function renderPlan(plan: Plan, options: { color?: boolean } = {}): string {
  const f = plan.facts;
  const tools = [`containerd ${f.containerdVersion ?? 'not installed'}`, `kubeadm ${f.kubeadmVersion ?? 'not installed'}`].join(', ');
  const lines = [`plan for "machineadm ${plan.command}" on ${plan.os}/${f.arch} (${tools})`];
  if (plan.secrets.length) {
    lines.push('', 'secrets: read when the step that needs them runs, never shown');
    for (const s of plan.secrets) lines.push(`  ${s.field}: ${s.from}`);
  }
  for (const phase of plan.phases) {
    lines.push('', `${phase.name}: ${phase.summary}`);
    if (phase.steps.length === 0) lines.push('  (no steps)');
    for (const step of phase.steps) {
      // A step may say itself that the configuration does not ask for it (its reason says so).
      const notApplicable = step.status === 'skipped' && step.reason?.startsWith('not applicable:');
      const status = step.status === 'change' ? 'will change' : notApplicable ? '' : step.status.replace(/-/g, ' ');
      const reason = [status, step.reason].filter(Boolean).join(': ');
      lines.push(`  ${notApplicable ? ' ' : MARK[step.status]} ${step.id}: ${step.summary} [${reason}]`);
      // A skipped step changes nothing in this run; what it lists is what it would do where it runs
      // (or, for reset's "not undone", what stays as it is).
      const indent = step.status === 'skipped' && step.changes.length && !step.reason?.startsWith('not undone:') ? (lines.push('      not done in this run; where it runs, it would:'), '  ') : '';
      for (const change of step.changes) {
        lines.push(`      ${indent}${change.action} ${change.target}${change.detail ? ` (${change.detail})` : ''}`);
        if (change.diff) lines.push(...change.diff.replace(/\n$/, '').split('\n').map((l) => `        ${indent}${options.color ? colorDiffLine(l) : l}`));
      }
      // What the step would fetch: refused under --offline, so an operator sees it before.
      for (const use of step.network ?? []) lines.push(`      network: ${use}`);
    }
  }
  const counts = plan.phases.flatMap((p) => p.steps).reduce<Record<string, number>>((acc, s) => ({ ...acc, [s.status]: (acc[s.status] ?? 0) + 1 }), {});
  lines.push('', `${counts.change ?? 0} to change, ${counts['up-to-date'] ?? 0} up to date, ${counts.skipped ?? 0} skipped`);
  return lines.join('\n') + '\n';
}
