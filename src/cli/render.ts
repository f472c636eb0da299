// Text renderings of plans and run outcomes. JSON output prints the same data as it is.
import type { Plan, RunOutcome } from '../phases/runner.ts';
import { formatDuration } from '../report/console.ts';

const MARK = { change: '~', 'up-to-date': '=', skipped: '-', 'not-selected': ' ', 'not-applicable': ' ' } as const;

export function renderPlan(plan: Plan): string {
  const f = plan.facts;
  const tools = [`containerd ${f.containerdVersion ?? 'not installed'}`, `kubeadm ${f.kubeadmVersion ?? 'not installed'}`].join(', ');
  const lines = [`plan for "machineadm ${plan.command}" on ${plan.os}/${f.arch} (${tools})`];
  for (const phase of plan.phases) {
    lines.push('', `${phase.name}: ${phase.summary}`);
    if (phase.steps.length === 0) lines.push('  (no steps)');
    for (const step of phase.steps) {
      const status = step.status === 'change' ? 'will change' : step.status.replace(/-/g, ' ');
      lines.push(`  ${MARK[step.status]} ${step.id}: ${step.summary} [${status}${step.reason ? `: ${step.reason}` : ''}]`);
      for (const change of step.changes) {
        lines.push(`      ${change.action} ${change.target}${change.detail ? ` (${change.detail})` : ''}`);
        if (change.diff) lines.push(...change.diff.replace(/\n$/, '').split('\n').map((l) => `        ${l}`));
      }
    }
  }
  const counts = plan.phases.flatMap((p) => p.steps).reduce<Record<string, number>>((acc, s) => ({ ...acc, [s.status]: (acc[s.status] ?? 0) + 1 }), {});
  lines.push('', `${counts.change ?? 0} to change, ${counts['up-to-date'] ?? 0} up to date, ${counts.skipped ?? 0} skipped`);
  return lines.join('\n') + '\n';
}

export function renderSummary(outcome: RunOutcome): string {
  const steps = outcome.phases.flatMap((p) => p.steps);
  const by = (r: string) => steps.filter((s) => s.result === r).length;
  const lines = [
    `machineadm ${outcome.command}: ${outcome.error?.exitCode === 4 ? 'reboot required' : outcome.result} in ${formatDuration(outcome.durationMs)} ` +
      `(${steps.length} steps: ${by('success')} changed, ${by('skipped')} skipped, ${by('warning')} warnings, ${by('failure')} failed)`,
  ];
  for (const step of steps.filter((s) => s.result === 'failure' || s.result === 'warning')) {
    lines.push(`  ${step.result === 'failure' ? 'failed' : 'warning'}: ${step.id}: ${step.error?.message ?? step.message ?? ''}`);
    if (step.error?.hint) lines.push(`    what to do: ${step.error.hint}`);
    const tailText = step.error?.details?.outputTail;
    if (typeof tailText === 'string' && tailText) lines.push('    output (last lines):', ...tailText.split('\n').slice(-15).map((l) => `      ${l}`));
  }
  return lines.join('\n') + '\n';
}
