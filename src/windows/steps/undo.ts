// How reset undoes the Windows steps that register services and firewall rules: from what each
// step recorded before its first change (Step.undoRecord, the earliest record kept), only what
// machineadm created goes: a service is stopped and deleted, a rule removed. A service or rule that
// was there before machineadm's first run is left as it is, and reset names it.
import type { Change, Step, Undo, UndoContext } from '../../engine/step.ts';
import { noSeamSkip, requireSeam, seamOf } from './seam.ts';

type Kind = 'services' | 'rules';
const WHAT: Record<Kind, string> = { services: 'service', rules: 'firewall rule' };

/** Before the step's first change: which of these names exist now ('present') or not ('absent'). */
export function recordExisting(kind: Kind, names: (ctx: Parameters<NonNullable<Step['undoRecord']>>[0]) => string[]): NonNullable<Step['undoRecord']> {
  return async (ctx) => {
    const windows = seamOf(ctx);
    if (!windows) return undefined;
    const found: Record<string, string> = {};
    for (const name of names(ctx)) found[name] = (kind === 'services' ? await windows.service(name) : await windows.firewallRule(name)) ? 'present' : 'absent';
    return { [kind]: found };
  };
}

function recorded(ctx: UndoContext, kind: Kind): { created: string[]; before: string[] } | undefined {
  const entries = ctx.undoRecord?.[kind] as Record<string, string> | undefined;
  if (!entries) return undefined;
  return { created: Object.keys(entries).filter((n) => entries[n] === 'absent'), before: Object.keys(entries).filter((n) => entries[n] === 'present') };
}

async function exists(ctx: UndoContext, kind: Kind, name: string): Promise<boolean> {
  const windows = seamOf(ctx);
  // A plan made elsewhere cannot look: it shows what the records say.
  if (!windows) return true;
  return (kind === 'services' ? await windows.service(name) : await windows.firewallRule(name)) !== undefined;
}

function leftAlone(kind: Kind, names: readonly string[]): string {
  return `${WHAT[kind]} ${names.join(', ')} ${names.length === 1 ? 'was' : 'were'} there before machineadm's first run: left as ${names.length === 1 ? 'it is' : 'they are'}${kind === 'rules' ? ' (with the settings machineadm gave it)' : ''}`;
}

export function removeCreated(kind: Kind, summary: string): Undo {
  return {
    summary,
    async check(ctx) {
      const names = recorded(ctx, kind);
      if (!names) {
        // The step ran without recording what was there (it found everything done, or an older machineadm ran it).
        const ran = ctx.done !== undefined && ctx.done.result !== 'skipped';
        return ran ? { done: false, changes: [], skipReason: `no record of which ${WHAT[kind]}s machineadm created (an older machineadm ran this step): left as they are` } : { done: true, changes: [] };
      }
      const changes: Change[] = [];
      for (const name of names.created) {
        if (await exists(ctx, kind, name)) changes.push({ action: kind === 'services' ? 'delete' : 'remove', target: `${WHAT[kind]} ${name}`, detail: kind === 'services' ? 'registered by machineadm: stopped, then deleted (sc.exe delete)' : 'added by machineadm' });
      }
      if (changes.length === 0) return names.before.length ? { done: false, changes: [], skipReason: leftAlone(kind, names.before) } : { done: true, changes: [] };
      const skip = noSeamSkip(ctx);
      return { done: false, changes, ...(skip ? { skipReason: skip } : {}) };
    },
    async apply(ctx) {
      const windows = requireSeam(ctx);
      const names = recorded(ctx, kind)!;
      for (const name of names.created) {
        if (!(await exists(ctx, kind, name))) continue;
        if (kind === 'services') await windows.removeService(name);
        else await windows.removeFirewallRule(name);
        ctx.log(`${WHAT[kind]} ${name} removed`);
      }
      if (names.before.length) ctx.log(leftAlone(kind, names.before));
    },
  };
}
