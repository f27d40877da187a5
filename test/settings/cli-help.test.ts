import test from 'ava';
import { makeDir } from '../helpers/controller';
import { CommonSettings } from '../../plugins/notifiers/host/defaults';
import { describeSetting } from '../../core/schema';
import { runCli } from '../helpers/cli';

test('the notifier command line help lists the common settings and each loaded type\'s settings from their schemas', async (t) => {
  const dir = makeDir(t, {});
  const r = await runCli(t, ['-d', dir, '--help']);
  t.is(r.code, 0, r.err);
  const lines = r.out.split('\n');
  for (const [name, s] of Object.entries(CommonSettings)) t.true(lines.includes(`  ${describeSetting(name, s)}`), name);
  t.true(lines.includes('  events: subscriptions: a list of {subject: state|action|log|server, ...} (the command line\'s subscribe)'));
  t.regex(r.out, /^ {4}uri \(string, required\): the receiver/m);
  t.regex(r.out, /^ {4}max_rows \(integer, default 1000000, at least 1\): most rows kept$/m);
});

test('set takes a common setting by its declaration: the rule of every setting, the reason as the controller gives it', async (t) => {
  const dir = makeDir(t, {});
  t.is((await runCli(t, ['-d', dir, 'create', 'n', 'json:http://127.0.0.1:9/x'])).code, 0);
  for (const [prop, value, why] of [['timeout', '-1', /timeout: -1 is out of range/], ['queue_size', '0', /queue_size: 0 is out of range \(at least 1\)/],
    ['enabled', 'maybe', /enabled: "maybe" is not yes or no/]] as const) {
    const r = await runCli(t, ['-d', dir, 'set', 'n', prop, value]);
    t.is(r.code, 1, prop);
    t.regex(r.err, why);
  }
  const ok = await runCli(t, ['-d', dir, 'set', 'n', 'retry_delay', '1.5']);
  t.is(ok.code, 0, ok.err);
  t.regex((await runCli(t, ['-d', dir, 'props', 'n'])).out, /^retry_delay\s+1\.5$/m);
});
