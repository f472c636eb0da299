// Property-based tests with fast-check: a fixed seed and a bounded number of runs in `npm test`
// (FUZZ_RUNS and FUZZ_SEED, set by `npm run fuzz`, make the same properties run longer), every
// input timed, and the number of inputs tried printed per property.
import fc from 'fast-check';
import { afterAll, expect } from 'vitest';
import { MachineadmError } from '../../src/errors.ts';

const DEFAULT_SEED = 20261130;
export const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : DEFAULT_SEED;
const fuzzRuns = process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : undefined;
/** The time one input may take; far above what any input needs, far below a hang. */
export const PER_INPUT_MS = Number(process.env.FUZZ_PER_INPUT_MS ?? 2_000);

const tried: string[] = [];
// Registered while the test file is collected (this module is imported then), printed once at its end.
afterAll(() => {
  if (tried.length) process.stdout.write(tried.map((line) => `${line}\n`).join(''));
});

function report(name: string, numRuns: number, slowestMs: number): void {
  tried.push(`property "${name}": ${numRuns} inputs tried (seed ${seed}, slowest ${slowestMs.toFixed(1)} ms)`);
}

type ErrorClass = abstract new (...args: never[]) => Error;

/**
 * Runs fn; returns what it threw, or undefined. An error of any other class than `allowed` (a
 * TypeError, a RangeError, a raw crash) fails the test with the input that caused it.
 */
export async function thrownBy(fn: () => unknown, allowed: readonly ErrorClass[] = [MachineadmError]): Promise<Error | undefined> {
  try {
    await fn();
    return undefined;
  } catch (error) {
    if (allowed.some((c) => error instanceof c)) return error as Error;
    throw new Error(`threw ${(error as Error)?.constructor?.name ?? typeof error} instead of ${allowed.map((c) => c.name).join(' or ')}: ${(error as Error)?.stack ?? String(error)}`);
  }
}

/**
 * Checks `predicate` for `runs` generated inputs (FUZZ_RUNS overrides), failing when it fails or
 * throws for one of them, or when one input takes longer than PER_INPUT_MS.
 */
export async function holds<T>(name: string, arbitrary: fc.Arbitrary<T>, predicate: (input: T) => unknown, runs: number): Promise<void> {
  let slowest = 0;
  const property = fc.asyncProperty(arbitrary, async (input) => {
    const start = performance.now();
    await predicate(input);
    const took = performance.now() - start;
    slowest = Math.max(slowest, took);
    if (took > PER_INPUT_MS) throw new Error(`one input took ${took.toFixed(0)} ms (bound ${PER_INPUT_MS} ms)`);
  });
  const details = await fc.check(property, { seed, numRuns: fuzzRuns ?? runs });
  report(name, details.numRuns, slowest);
  if (details.failed) expect.fail(fc.defaultReportMessage(details) ?? `property "${name}" failed`);
  expect(details.numRuns).toBe(fuzzRuns ?? runs);
}
