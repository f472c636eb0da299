// Step selection by slash ids, with the cases of kubeadm's workflow runner tests: a parent selects
// its children, skip beats only, an unknown id is an error that lists the known ids.
import { describe, expect, it } from 'vitest';
import { selectSteps, type Selection } from '../../src/engine/select.ts';
import type { Phase, Step } from '../../src/engine/step.ts';
import { UsageError } from '../../src/errors.ts';

function step(id: string): Step {
  return { id, summary: id, check: async () => ({ done: true, changes: [] }), apply: async () => undefined };
}

// prepare: foo, foo/bar, foo/baz, qux; provision: join; report: result
const phases: Phase[] = [
  { name: 'prepare', summary: '', steps: [step('foo'), step('foo/bar'), step('foo/baz'), step('qux')] },
  { name: 'provision', summary: '', steps: [step('join')] },
  { name: 'report', summary: '', steps: [step('result')], runsAfterFailure: true },
];
const ALL = ['prepare/foo', 'prepare/foo/bar', 'prepare/foo/baz', 'prepare/qux', 'provision/join', 'report/result'];

function selected(selection: Selection): string[] {
  return selectSteps(phases, selection).filter((s) => s.selected).map((s) => s.fullId);
}

describe('selectSteps', () => {
  it.each<[string, Selection, string[]]>([
    ['no options select every step', {}, ALL],
    ['empty lists select every step', { only: [], skip: [] }, ALL],
    ['--only a step selects that step', { only: ['prepare/qux'] }, ['prepare/qux']],
    ['--only a parent selects it and its children', { only: ['prepare/foo'] }, ['prepare/foo', 'prepare/foo/bar', 'prepare/foo/baz']],
    ['--only a phase name selects the whole phase', { only: ['provision'] }, ['provision/join']],
    ['--only several ids selects their union, in registry order', { only: ['report/result', 'prepare/foo/baz'] }, ['prepare/foo/baz', 'report/result']],
    ['an id without the phase prefix selects the step in its phase', { only: ['foo/bar'] }, ['prepare/foo/bar']],
    ['leading and trailing slashes are ignored', { only: ['/prepare/qux/'] }, ['prepare/qux']],
    ['--skip a step leaves only that step out', { skip: ['prepare/qux'] }, ALL.filter((id) => id !== 'prepare/qux')],
    ['--skip a parent leaves out its children too', { skip: ['prepare/foo'] }, ['prepare/qux', 'provision/join', 'report/result']],
    ['--skip a phase leaves out the whole phase', { skip: ['provision'] }, ALL.filter((id) => !id.startsWith('provision/'))],
    ['skip beats only for a child of the selected parent', { only: ['prepare/foo'], skip: ['prepare/foo/baz'] }, ['prepare/foo', 'prepare/foo/bar']],
    ['skip beats only for the same id', { only: ['prepare/qux'], skip: ['prepare/qux'] }, []],
    ['skipping a parent beats selecting its child', { only: ['prepare/foo/bar'], skip: ['prepare'] }, []],
    ['a child id does not select its parent', { only: ['prepare/foo/bar'] }, ['prepare/foo/bar']],
  ])('%s', (_name, selection, expected) => {
    expect(selected(selection)).toEqual(expected);
  });

  it('keeps every step in the result, marking the ones left out', () => {
    const all = selectSteps(phases, { only: ['provision'] });
    expect(all.map((s) => s.fullId)).toEqual(ALL);
    expect(all.map((s) => s.selected)).toEqual([false, false, false, false, true, false]);
  });

  it.each<[string, Selection, string]>([
    ['an unknown --only id', { only: ['prepare/nope'] }, 'prepare/nope'],
    ['an unknown --skip id', { skip: ['nope'] }, 'nope'],
    ['a prefix that is not a whole path segment', { only: ['prepare/fo'] }, 'prepare/fo'],
    ['a known id in the wrong phase', { only: ['provision/qux'] }, 'provision/qux'],
    ['a bare slash', { skip: ['/'] }, '/'],
  ])('rejects %s as a usage error naming it and listing the known ids', (_name, selection, bad) => {
    let error: unknown;
    try {
      selectSteps(phases, selection);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(UsageError);
    const usage = error as UsageError;
    expect(usage.exitCode).toBe(2);
    expect(usage.message).toContain(`"${bad}"`);
    for (const known of ['prepare', 'provision', 'report', ...ALL]) expect(usage.hint).toContain(known);
  });

  it('checks every id before selecting anything, also when another id is valid', () => {
    expect(() => selectSteps(phases, { only: ['prepare/qux'], skip: ['typo'] })).toThrow(/"typo"/);
  });

  it('says there are no ids when no phase has steps', () => {
    const empty: Phase[] = [{ name: 'prepare', summary: '', steps: [] }];
    expect(() => selectSteps(empty, { only: ['x'] })).toThrow(UsageError);
    expect(selectSteps(empty, {})).toEqual([]);
  });
});
