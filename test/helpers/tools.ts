import test from 'ava';
import { missing } from './which';

export { which, missing } from './which';

/**
 * Tests that need a program from outside npm (sqlite3, python3, openssl,
 * mosquitto, systemd-analyze, ...): `.ci/run` installs them all; on a machine
 * without one, the tests that need it are skipped, and the skipped test's
 * title says which program was missing, so `npm test` still passes and says
 * what it did not check.
 */

/**
 * `test`, or `test.skip` with the missing programs in the title:
 *   needs('sqlite3', 'python3')('reads the file', async (t) => ...)
 */
export function needs(...programs: string[]): typeof test {
  const absent = missing(...programs);
  if (!absent.length) return test;
  const skip = ((title: string, ...rest: unknown[]) => (test.skip as any)(`${title} [skipped: needs ${absent.join(', ')}]`, ...rest)) as any;
  // test.serial and the other modifiers of a skipped test are skipped as well
  for (const k of ['serial', 'failing', 'only']) skip[k] = skip;
  skip.skip = skip;
  return skip as typeof test;
}
