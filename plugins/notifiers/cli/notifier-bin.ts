#!/usr/bin/env node
import 'reflect-metadata';
import { runNotifierCli } from './notifier';

/**
 * Entry of uc-notifier, lm-notifier and sfa-notifier (package bins): the
 * product comes from the name it was started by, or --product.
 */
// the controller's plugin loader reads every module under plugins/: only a run as a program starts the CLI
if (require.main === module) runNotifierCli(process.argv.slice(2), process.argv[1], {
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
}).then((code) => {
  // an endpoint test may leave a connection closing: the answer is known, so leave now
  process.exitCode = code;
  setImmediate(() => process.exit(code));
}, (err) => {
  process.stderr.write(`error: ${(err as Error)?.message ?? String(err)}\n`);
  process.exit(1);
});
