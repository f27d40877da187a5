import fs from 'node:fs';
import path from 'node:path';

/**
 * The version of this package (package.json `version`), printed by
 * `--version` of the controller and the notifier CLIs. Not the `version` of
 * the `test` function, which is the EVA ICS API version this controller is
 * compatible with (core/defaults.ts).
 */
export const PackageVersion: string = (() => {
  // dist/core/version.js in the checkout and in an installed package: the package root is two folders up
  const file = path.resolve(__dirname, '..', '..', 'package.json');
  return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
})();
