#!/usr/bin/env node
import 'reflect-metadata';
import { Command, Option } from 'commander';
import { Controller } from './controller';
import { Products, Product } from './defaults';
import { KeyStore } from './auth/keys';
import { HttpServer } from './http/server';
import { Lifecycle } from './lifecycle';
import { supervise } from './watchdog';
import { PackageVersion } from './version';

/**
 * Entry: `eva-controller` (the package bin) or `node dist/core/main.js`,
 * with [--dir DIR] [--product uc|lm|sfa] [--watchdog] [--version].
 * SIGTERM/SIGINT and shutdown_core stop the controller cleanly and exit 0.
 * With --watchdog this process only supervises: it runs the controller as a
 * child and starts it again whenever it exits (core/watchdog.ts).
 */
async function main(): Promise<void> {
  // the console may be a pipe whose reader went away (a closed terminal, a restarted journald):
  // a lost console line must not end the controller
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  const program = new Command()
    .name('eva-controller')
    .description('Controller management API (sys-api) and notification system')
    .version(PackageVersion)
    .option('-d, --dir <dir>', 'controller directory', process.cwd())
    .addOption(new Option('-p, --product <product>', 'controller kind').choices([...Products]).default('uc'))
    .option('--watchdog', 'supervise: run the controller as a child, start it again when it exits (with back-off)')
    .parse();
  const opts = program.opts<{ dir: string; product: Product; watchdog?: boolean }>();
  if (opts.watchdog) {
    supervise(__filename, process.argv.slice(2).filter((a) => a !== '--watchdog'));
    return;
  }
  const ctl = await Controller.start({ dir: opts.dir, product: opts.product });
  // the console always says where the controller is and where a generated master key went,
  // whatever the log configuration
  const keys = ctl.get(KeyStore);
  if (keys.generatedMasterFile) {
    process.stdout.write(`a master key was generated: see ${keys.generatedMasterFile} (readable by its owner only)\n`);
  }
  for (const b of ctl.get(HttpServer).bound) {
    const host = b.host.includes(':') ? `[${b.host}]` : b.host;
    process.stdout.write(`${opts.product} controller listening on ${b.tls ? 'https' : 'http'}://${host}:${b.port}\n`);
  }
  let stopping = false;
  const stop = async (reason: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`${reason}: stopping\n`);
    try {
      await ctl.stop();
      process.exit(0);
    } catch (err) {
      process.stderr.write(`stop failed: ${(err as Error).message}\n`);
      process.exit(1);
    }
  };
  ctl.get(Lifecycle).onShutdown((reason) => stop(reason));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((err) => {
  process.stderr.write(`controller failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
