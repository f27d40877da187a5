import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { Keys, makeDir, startController } from '../helpers/controller';
import { lineOf, runCli, runMain } from '../helpers/cli';

/**
 * The `[notifiers]` section of etc/<product>.ini is declared by the notifiers
 * plugin (delivery settings) and the db notifier plugin (write budget): it is
 * checked like every other section.
 */

const iniOf = (dir: string) => path.join(dir, 'etc', 'uc.ini');
/** The line of `key` in the ini makeDir wrote. */
const lineNo = (dir: string, key: string) => fs.readFileSync(iniOf(dir), 'utf8').split('\n').findIndex((l) => l.startsWith(`${key} =`)) + 1;

const cases: { what: string; kv: Record<string, string | number>; key: string; message: RegExp }[] = [
  { what: 'a value of the wrong type', kv: { queue_size: 'lots' }, key: 'queue_size', message: /\[notifiers\] queue_size: "lots" is not a whole number$/ },
  { what: 'a zero bound', kv: { max_batch: 0 }, key: 'max_batch', message: /\[notifiers\] max_batch: 0 is out of range \(at least 1\)$/ },
  { what: 'a negative delay', kv: { retry_delay: -1 }, key: 'retry_delay', message: /\[notifiers\] retry_delay: -1 is out of range \(0 to \d+\)$/ },
  { what: 'a misspelt setting', kv: { retrys: 2 }, key: 'retrys', message: /\[notifiers\] unknown setting retrys \(did you mean retries\?\)$/ },
  { what: 'a bad db write budget', kv: { max_write_mb_per_hour: 0 }, key: 'max_write_mb_per_hour', message: /\[notifiers\] max_write_mb_per_hour: 0 is out of range \(at least 0\.001\)$/ },
];

for (const c of cases) {
  test(`[notifiers]: ${c.what} stops the controller (exit 3, file:line), and --check-config and the notifier command line say the same`, async (t) => {
    const dir = makeDir(t, { ini: { notifiers: c.kv } });
    const prefix = `${iniOf(dir)}:${lineNo(dir, c.key)}: error: `;
    const start = await runMain(t, ['--dir', dir]);
    t.is(start.code, 3, start.err);
    t.regex(lineOf(start.err, prefix) ?? start.err, c.message);
    t.regex(start.err, /controller not started: the settings above are in error/);
    t.false(start.out.includes('listening'));
    const check = await runMain(t, ['--dir', dir, '--check-config']);
    t.is(check.code, 3, check.err);
    t.regex(lineOf(check.err, prefix) ?? check.err, c.message);
    const cli = await runCli(t, ['-d', dir, 'list']);
    t.is(cli.code, 3, cli.err);
    t.regex(lineOf(cli.err, prefix) ?? cli.err, c.message);
    t.regex(cli.err, /notifier command not run: the settings above are in error/);
  });
}

test('[notifiers] good values start; the section is described in rpc.discover x-settings, by both plugins that declare it', async (t) => {
  const dir = makeDir(t, { ini: { notifiers: { retries: 0, queue_size: 7, max_write_mb_per_hour: 8.5 } } });
  const check = await runMain(t, ['--dir', dir, '--check-config']);
  t.is(check.code, 0, check.err);
  t.regex(check.out, /0 error\(s\), 0 other finding\(s\)/);
  const cli = await runCli(t, ['-d', dir, 'list']);
  t.is(cli.code, 0, cli.err);
  const { client } = await startController(t, { dir });
  const d = await client.rpc('rpc.discover', { k: Keys.master });
  const settings = d.result['x-settings'].notifiers;
  t.like(settings.queue_size, { type: 'int', default: 10000, min: 1 });
  t.like(settings.retries, { type: 'int', default: 5, min: 0 });
  t.like(settings.stop_drain, { type: 'number', default: 3, unit: 's' });
  t.like(settings.max_write_mb_per_hour, { type: 'number', default: 64, min: 0.001, unit: 'MB/h' });
});
