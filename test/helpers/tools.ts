import test from 'ava';
import { missing } from './which';

export { which, missing } from './which';

/**
 * Tests that cannot run here (a program from outside npm is missing, the
 * run is not root, the node is too old): `.ci/run` installs what it can; a
 * test that still cannot run is skipped, and its title says why, so `npm
 * test` passes and its list of skipped tests says what it did not check.
 */

/**
 * `test`, or with a reason `test.skip` whose title ends `[skipped: <reason>]`:
 *   skipWhen(root ? false : 'mounting a tmpfs needs root')('fills the disk', async (t) => ...)
 * Its modifiers (serial, failing, only, skip) are skipped the same way.
 */
export function skipWhen(reason: string | false | undefined | null): typeof test {
  if (!reason) return test;
  const skip = ((title: string, ...rest: unknown[]) => (test.skip as any)(`${title} [skipped: ${reason}]`, ...rest)) as any;
  for (const k of ['serial', 'failing', 'only']) skip[k] = skip;
  skip.skip = skip;
  return skip as typeof test;
}

/**
 * `test`, or `test.skip` with the missing programs in the title:
 *   needs('sqlite3', 'python3')('reads the file', async (t) => ...)
 */
export function needs(...programs: string[]): typeof test {
  const absent = missing(...programs);
  return skipWhen(absent.length > 0 && `needs ${absent.join(', ')}`);
}
