#!/usr/bin/env node
import 'reflect-metadata';
import fs from 'node:fs';
import path from 'node:path';
import { Command, Option } from 'commander';
import { Controller } from './controller';
import { Products, Product } from './defaults';
import { KeyStore } from './auth/keys';
import { HttpServer } from './http/server';
import { Lifecycle } from './lifecycle';
import { supervise } from './watchdog';
import { PackageVersion } from './version';
import { Paths } from './paths';
import { discoverPlugins } from './plugins';
import { checkSettingsFiles, configErrorText } from './settings/check';
import { CONFIG_EXIT_CODE, ConfigError, formatFinding, type Finding } from './settings/schema';

/**
 * Entry: `eva-controller` (the package bin) or `node dist/core/main.js`,
 * with [--dir DIR] [--product uc|lm|sfa] [--init] [--check-config] [--watchdog] [--version].
 * A settings file in error stops the start with every finding on stderr
 * (`file:line: error: ...`) and exit code 3; --check-config prints the
 * findings of a controller directory without starting it (exit 3 on errors).
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
    .option('--init', 'create the controller directory if it does not exist (with the sample etc/<product>.ini and a new master key)')
    .option('--check-config', 'check the settings files of the controller directory, print every finding, do not start')
    .option('--watchdog', 'supervise: run the controller as a child, start it again when it exits (with back-off)')
    .parse();
  const opts = program.opts<{ dir: string; product: Product; init?: boolean; checkConfig?: boolean; watchdog?: boolean }>();
  // a mistyped --dir must not become a new controller with a new master key; --check-config creates nothing
  if ((!opts.init || opts.checkConfig) && !fs.existsSync(opts.dir)) {
    process.stderr.write(opts.checkConfig
      ? `${opts.dir}: no such controller directory: nothing to check (--check-config creates nothing; start with --init to create it)\n`
      : `${opts.dir}: no such controller directory (give --init to create one)\n`);
    process.exit(CONFIG_EXIT_CODE);
  }
  if (opts.init && !opts.checkConfig) initDir(new Paths(opts.dir, opts.product));
  if (opts.checkConfig) {
    const errors = await checkConfig(new Paths(opts.dir, opts.product));
    process.exit(errors ? CONFIG_EXIT_CODE : 0);
  }
  if (opts.watchdog) {
    supervise(__filename, process.argv.slice(2).filter((a) => a !== '--watchdog'));
    return;
  }
  const ctl = await Controller.start({ dir: opts.dir, product: opts.product });
  // signals are taken before the console says the controller listens: a supervisor that stops it
  // as soon as it reads that line must get a clean stop, not the default exit by signal
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
}

/**
 * --init: a controller directory whose etc/<product>.ini is missing gets the
 * sample the package ships (every setting, documented, commented out), so
 * the first start has a file to edit. An existing file is never touched.
 */
function initDir(paths: Paths): void {
  if (fs.existsSync(paths.configFile)) return;
  const sample = path.resolve(__dirname, '..', '..', 'etc', `${paths.product}.ini-dist`);
  fs.mkdirSync(paths.etc, { recursive: true });
  fs.copyFileSync(sample, paths.configFile, fs.constants.COPYFILE_EXCL);
  process.stdout.write(`${paths.configFile} created from the sample: edit it, check it with --check-config\n`);
}

/** --check-config: every finding about the settings files on stderr, a summary on stdout; the number of errors. */
async function checkConfig(paths: Paths): Promise<number> {
  const findings: Finding[] = [];
  const plugins = await discoverPlugins(paths.plugins, (file, code, reason, name) => {
    findings.push({ level: 'warning', file, message: `plugin ${name ?? ''} skipped [${code}]: ${reason}`.replace('  ', ' ') });
  });
  findings.push(...checkSettingsFiles(paths, plugins.map((l) => ({ ...l.def, file: l.file }))));
  // settings that only a server can judge (a database's password), once the files are right
  if (!findings.some((f) => f.level === 'error')) {
    for (const l of plugins) {
      try {
        findings.push(...(await l.def.checkConnections?.(paths) ?? []));
      } catch (err) {
        findings.push({ level: 'error', file: l.file, message: `plugin ${l.def.name} could not check its connections: ${err instanceof Error ? err.message : String(err)}` });
      }
    }
  }
  for (const f of findings) process.stderr.write(`${formatFinding(f)}\n`);
  const errors = findings.filter((f) => f.level === 'error').length;
  process.stdout.write(`${paths.dir}: ${errors} error(s), ${findings.length - errors} other finding(s)\n`);
  return errors;
}

main().catch((err) => {
  if (err instanceof ConfigError) {
    process.stderr.write(configErrorText(err, 'controller not started'));
    process.exit(CONFIG_EXIT_CODE);
  }
  process.stderr.write(`controller failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
