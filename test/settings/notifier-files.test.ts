import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { Keys, makeDir, startController } from '../helpers/controller';
import { controllerLog } from '../helpers/notifiers';
import { lineOf, runCli, runMain } from '../helpers/cli';

/**
 * Notifier files are settings files too: the common fields (declared once,
 * host/defaults.ts) and the type's own (its schema) decide what is known; a
 * bad file stops the controller (exit 3) with the file and a clear message.
 */

const hook = { type: 'json', uri: 'http://127.0.0.1:9/x', skip_test: true, events: [] };
const fileOf = (dir: string, id: string) => path.join(dir, 'runtime', 'uc_notify.d', `${id}.json`);
const dirWith = (t: Parameters<typeof makeDir>[0], files: Record<string, string>) =>
  makeDir(t, { files: Object.fromEntries(Object.entries(files).map(([id, text]) => [`runtime/uc_notify.d/${id}.json`, text])) });
const json = (id: string, fields: Record<string, unknown>) => JSON.stringify({ id, ...fields }, null, 2);

const cases = [
  { what: 'a misspelt common field', text: json('n', { ...hook, timout: 5 }), line: '', message: /^unknown field timout \(did you mean timeout\?\)$/ },
  { what: 'a misspelt type setting', text: json('n', { ...hook, notify_kye: 'x' }), line: '', message: /^unknown field notify_kye \(did you mean notify_key\?\)$/ },
  { what: 'a common field of the wrong type', text: json('n', { ...hook, retries: 'many' }), line: '', message: /^retries: "many" is not a whole number$/ },
  { what: 'a common field out of range', text: json('n', { ...hook, queue_size: 0 }), line: '', message: /^queue_size: 0 is out of range \(at least 1\)$/ },
  { what: 'a negative timeout', text: json('n', { ...hook, timeout: -2 }), line: '', message: /^timeout: -2 is out of range/ },
  { what: 'a type setting of the wrong kind', text: json('n', { ...hook, notify_key: { a: 1 } }), line: '', message: /^bad json config: notify_key must be a string$/ },
  { what: 'a required type setting missing', text: json('n', { ...hook, uri: '' }), line: '', message: /^bad json config: uri is required$/ },
  { what: 'an id that is not the file name', text: json('other', hook), line: '', message: /^id "other" does not match the file name n$/ },
  { what: 'a bad subscription', text: json('n', { ...hook, events: [{ subject: 'weather' }] }), line: '', message: /^events: unknown subscription subject: weather$/ },
  { what: 'malformed JSON', text: '{\n  "id": "n",\n  "type": "json",,\n}', line: ':3', message: /^not valid JSON: .*\(line 3, column \d+\)$/ },
];

for (const c of cases) {
  test(`a notifier file with ${c.what} stops the controller (exit 3, the file and the reason); --check-config says the same`, async (t) => {
    const dir = dirWith(t, { n: c.text });
    const prefix = `${fileOf(dir, 'n')}${c.line}: error: `;
    for (const args of [['--dir', dir], ['--dir', dir, '--check-config']]) {
      const r = await runMain(t, args);
      t.is(r.code, 3, r.err);
      const line = lineOf(r.err, prefix);
      t.truthy(line, r.err);
      t.regex(line!.slice(prefix.length), c.message);
      t.false(r.out.includes('listening'));
    }
  });
}

test('every bad notifier file is told at once; a good one beside them is not', async (t) => {
  const dir = dirWith(t, { a: json('a', { ...hook, timout: 1 }), b: json('b', { ...hook, retries: -1 }), good: json('good', hook) });
  const r = await runMain(t, ['--dir', dir, '--check-config']);
  t.is(r.code, 3);
  t.regex(r.out, /2 error\(s\)/);
  t.truthy(lineOf(r.err, `${fileOf(dir, 'a')}: error: unknown field timout`));
  t.truthy(lineOf(r.err, `${fileOf(dir, 'b')}: error: retries: -1 is out of range`));
  t.false(r.err.includes('good.json'), r.err);
});

test('a notifier of a type no loaded plugin declares is a warning: the controller starts', async (t) => {
  const dir = dirWith(t, { pigeon: json('pigeon', { type: 'carrier-pigeon', enabled: true, wings: 2 }) });
  const r = await runMain(t, ['--dir', dir, '--check-config']);
  t.is(r.code, 0, r.err);
  t.truthy(lineOf(r.err, `${fileOf(dir, 'pigeon')}: warning: type carrier-pigeon is not declared by any loaded notifier plugin`), r.err);
});

test('an EVA ICS 3.3 notifier file loads: each field 3.3 wrote that this type does not use is one info line, not an error', async (t) => {
  // fields GenericNotifier / GenericHTTPNotifier / HTTP_JSONNotifier serialize() wrote (v3.3.2 lib/eva/notify.py)
  const eva33 = {
    id: 'hj', type: 'http-json', uri: 'http://127.0.0.1:9/x', enabled: false, events: [], space: 'plant1', interval: 0.5,
    skip_test: false, timeout: 5.0, ssl_verify: false, username: 'u', password: 'p', method: 'list', notify_key: 'nk',
  };
  const dir = dirWith(t, { hj: JSON.stringify(eva33, null, 4) });
  const r = await runMain(t, ['--dir', dir, '--check-config']);
  t.is(r.code, 0, r.err);
  // interval and method work as in 3.3; certificates are always verified
  t.truthy(lineOf(r.err, `${fileOf(dir, 'hj')}: info: ssl_verify is an EVA ICS 3.3 field a json notifier here does not use: ignored`), r.err);
  t.false(/info: (interval|method) is/.test(r.err), r.err);
  t.regex(r.out, /0 error\(s\), 1 other finding\(s\)/);
  const { client } = await startController(t, { dir });
  const n = await client.ok('get_notifier', { k: Keys.master, i: 'hj' });
  t.is(n.problem, undefined);
  t.is(n.space, 'plant1');
  t.is(n.method, 'list');
  t.is(n.interval, 0.5);
  t.regex(controllerLog(dir), /hj\.json: info: ssl_verify is an EVA ICS 3\.3 field/);
});

test('what a type\'s own checks refuse (beyond its schema) leaves that notifier not usable; the controller runs', async (t) => {
  const dir = dirWith(t, { ftp: json('ftp', { ...hook, uri: 'ftp://example.org/x' }), good: json('good', hook) });
  const r = await runMain(t, ['--dir', dir, '--check-config']);
  t.is(r.code, 0, r.err);
  const { client } = await startController(t, { dir });
  t.regex((await client.ok('get_notifier', { k: Keys.master, i: 'ftp' })).problem, /uri must be http or https/);
  t.is((await client.ok('get_notifier', { k: Keys.master, i: 'good' })).problem, undefined);
  // the command line, which writes files, refuses it
  const c = await runCli(t, ['-d', dir, 'create', 'ftp2', 'json:ftp://example.org/x']);
  t.is(c.code, 1);
  t.regex(c.err, /http or https/);
});

test('the notifier command line refuses to write what the controller would refuse, with the same reason', async (t) => {
  const dir = dirWith(t, { n: json('n', hook) });
  const set = await runCli(t, ['-d', dir, 'set', 'n', 'retries', 'many']);
  t.is(set.code, 1);
  t.regex(set.err, /retries: "many" is not a whole number/);
  fs.writeFileSync(fileOf(dir, 'n'), json('n', { ...hook, timout: 5 }));
  const list = await runCli(t, ['-d', dir, 'list']);
  t.is(list.code, 0, list.err);
  t.regex(list.out, /n\s+unusable\s+notifier n: unknown field timout \(did you mean timeout\?\)/);
});
