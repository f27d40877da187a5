import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { makeDir } from '../helpers/controller';
import { runCli } from '../helpers/cli';

/** What the notifier command line says of a mistyped command, option or property. */

test('an unknown command or option is one line: what is wrong, the closest name, where the usage is; exit 2', async (t) => {
  const dir = makeDir(t);
  const cases: [string[], string][] = [
    [['bogus'], 'error: unknown command \'bogus\'; see uc-notifier --help'],
    [['lst'], 'error: unknown command \'lst\' (did you mean list?); see uc-notifier --help'],
    [['subscrbe', 'state', 'x'], 'error: unknown command \'subscrbe\' (did you mean subscribe?); see uc-notifier --help'],
    [['--colour', 'list'], 'error: unknown option \'--colour\'; see uc-notifier --help'],
    [['--dri', dir, 'list'], 'error: unknown option \'--dri\' (did you mean --dir?); see uc-notifier --help'],
    [['-p', 'xx', 'list'], 'error: option \'-p, --product <product>\' argument \'xx\' is invalid. Allowed choices are uc, lm, sfa; see uc-notifier --help'],
  ];
  for (const [args, line] of cases) {
    const r = await runCli(t, ['--dir', dir, ...args]);
    t.is(r.code, 2, args.join(' '));
    t.is(r.err, `${line}\n`, args.join(' '));
    t.is(r.out, '', args.join(' '));
  }
  // a command's own usage error still shows that command's (short) usage
  const r = await runCli(t, ['--dir', dir, 'create', 'only-id']);
  t.is(r.code, 2);
  t.regex(r.err, /^error: missing required argument 'props'\n\nUsage: uc-notifier create /);
});

test('set with an unknown property suggests the closest name, as the settings check does for the ini; the file is unchanged', async (t) => {
  const dir = makeDir(t);
  t.is((await runCli(t, ['--dir', dir, 'create', 'h', 'db:h.db'])).code, 0);
  t.is((await runCli(t, ['--dir', dir, 'create', 'm', 'mqtt:localhost'])).code, 0);
  const file = (id: string) => fs.readFileSync(path.join(dir, 'runtime', 'uc_notify.d', `${id}.json`), 'utf8');
  const before = { h: file('h'), m: file('m') };
  const cases: [string[], RegExp][] = [
    [['set', 'h', 'kep', '60'], /^error: unknown property kep for a db notifier \(did you mean keep\?\); known: .*\bkeep\b/],
    [['set', 'h', 'Queue_Size', '60'], /^error: unknown property Queue_Size for a db notifier \(did you mean queue_size\?\); known: /],
    [['set', 'm', 'qo.state', '1'], /^error: unknown property qo\.state for a mqtt notifier \(did you mean qos\.state\?\); known: /],
    [['set', 'm', 'qos.stat', '1'], /^error: unknown property qos\.stat: qos has no member stat \(did you mean qos\.state\?\)$/m],
    // nothing close: no guess
    [['set', 'h', 'colour', 'red'], /^error: unknown property colour for a db notifier; known: /],
    [['set', 'm', 'qos.weather', '1'], /^error: unknown property qos\.weather: qos has no member weather$/m],
  ];
  for (const [args, message] of cases) {
    const r = await runCli(t, ['--dir', dir, ...args]);
    t.is(r.code, 1, args.join(' '));
    t.regex(r.err, message, args.join(' '));
    t.is(r.err.split('\n').length, 2, `one line: ${args.join(' ')}`);
  }
  t.deepEqual({ h: file('h'), m: file('m') }, before);
});
