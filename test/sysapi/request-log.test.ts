import fs from 'node:fs';
import test from 'ava';
import { startController, Keys } from '../helpers/controller';
import { controllerLog } from '../helpers/notifiers';
import { sqlite3, userDbOf } from '../helpers/accounts';
import { until } from '../helpers/wait';

/**
 * The `API request` lines of the controller log (EVA ICS 3.3's, read by its
 * log readers) and the one masking rule they share with the API call log.
 */

const m = { k: Keys.master };

/** The messages of module api in the memory log, from `l` up. */
async function apiLines(client: any, l = 10): Promise<{ l: number; msg: string }[]> {
  return (await client.ok('log_get', { ...m, l, n: 10_000 })).filter((r: any) => r.mod === 'api').map((r: any) => ({ l: r.l, msg: r.msg }));
}

test('a call writes 3.3\'s "API request <key id>@<address>:<function>, <params>" line at its function\'s level; refusals of a right add a warning', async (t) => {
  const { client, dir } = await startController(t);
  await client.ok('set_cvar', { ...m, i: 'x', v: '1' });
  t.is((await client.get('set_cvar', { ...m, i: 'y', v: 2 })).status, 200);
  await client.ok('test', m);
  await client.ok('create_key', { ...m, i: 'k9' });
  await client.rpc('set_cvar', { k: Keys.plain, i: 'x', v: '3' });
  await client.rpc('set_cvar', { k: 'no-such-key', i: 'x', v: '4' });
  await client.rpc('no_such_function', { ...m, i: 'x' });
  const lines = await apiLines(client);
  t.deepEqual(lines.filter((r) => r.msg.startsWith('API ')), [
    { l: 20, msg: 'API request masterkey@127.0.0.1:set_cvar, i="x" v="1"' },
    { l: 20, msg: 'API request masterkey@127.0.0.1:set_cvar, i="y" v="2"' },
    // test is a debug line: not kept while debug mode is off
    { l: 30, msg: 'API request masterkey@127.0.0.1:create_key, i="k9"' },
    { l: 20, msg: 'API request plain@127.0.0.1:set_cvar, i="x" v="3"' },
    { l: 30, msg: 'API call plain@127.0.0.1:set_cvar access denied' },
    // a wrong key has no line of its own (the key check logs refusals, once per interval)
    // a function that does not exist: its values hidden (it may be a misspelt login); no key is looked up for it
    { l: 20, msg: 'API request unknown@127.0.0.1:no_such_function, i="<hidden>"' },
  ]);
  // the same lines in the log file
  const file = controllerLog(dir);
  for (const r of lines.filter((x) => x.msg.startsWith('API '))) t.true(file.includes(` api: ${r.msg}`), r.msg);

  // in debug mode the debug lines too
  await client.ok('set_debug', { ...m, debug: true });
  await client.ok('test', m);
  await client.ok('get_cvar', { ...m, i: 'x' });
  const debug = (await apiLines(client)).filter((r) => r.l === 10).map((r) => r.msg);
  t.deepEqual(debug.filter((s) => /:(test|get_cvar)\b/.test(s)), ['API request masterkey@127.0.0.1:test', 'API request masterkey@127.0.0.1:get_cvar, i="x"']);
});

test('[server] log_api_requests = no: no API request lines', async (t) => {
  const { client } = await startController(t, { ini: { server: { log_api_requests: false, debug: true } } });
  await client.ok('set_cvar', { ...m, i: 'x', v: '1' });
  await client.ok('test', m);
  await client.rpc('set_cvar', { k: Keys.plain, i: 'x', v: '3' });
  t.deepEqual((await apiLines(client)).filter((r) => r.msg.startsWith('API ')), []);
});

test('no secret reaches api_log_get, log_get, the log file or the user db: sent under another name, to a refused call, in any set_key_prop value', async (t) => {
  const { client, dir } = await startController(t, {
    ini: { server: { keep_api_log: 3600, api_log_write_interval: 0.1, debug: true }, webapi: { login_free_failures: 100 } },
  });
  const S = Array.from({ length: 12 }, (_, i) => `Secret-${i}-${'x'.repeat(20)}`);
  await client.ok('create_key', { ...m, i: 'k1' });
  await client.ok('create_user', { ...m, u: 'op', p: 'op-password', a: 'k1' });
  // a key value in the wrong field of set_key_prop, and in its right one
  await client.rpc('set_key_prop', { ...m, i: 'k1', p: S[0] });
  await client.rpc('set_key_prop', { ...m, i: 'k1', p: 'key', v: S[1] });
  await client.rpc('set_key_prop', { ...m, i: 'k1', p: 'hosts_allow', v: S[2] });
  // passwords under other names than p
  await client.rpc('login', { u: 'op', pass: S[3] });
  await client.rpc('login', { user: 'op', password: S[4] });
  await client.rpc('create_user', { ...m, u: 'x', password: S[5], a: 'k1' });
  // to calls refused: a key without the right, a wrong key, over both transports
  await client.rpc('create_user', { k: Keys.plain, u: 'y', p: S[6], a: 'k1' });
  await client.get('create_user', { k: Keys.plain, u: 'y', p: S[7], a: 'k1' });
  await client.post('set_user_password', { k: 'wrong-key', u: 'op', p: S[8] });
  // a misspelt function, a secret inside an object, any token
  await client.rpc('logn', { ...m, u: 'op', p: S[9] });
  await client.rpc('set_cvar', { ...m, i: 'c', v: { apikey: S[10] } });
  await client.rpc('test', { k: `token:${S[11]}` });

  const calls = (await client.ok('api_log_get', m)).filter((r: any) => r.func !== 'api_log_get' && r.func !== 'log_get');
  t.true(calls.length >= 14, 'every call recorded');
  const byFunc = (f: string) => calls.filter((r: any) => r.func === f).map((r: any) => r.params);
  t.deepEqual(byFunc('set_key_prop'), ['{"i":"k1","p":"<hidden>"}', '{"i":"k1","p":"key","v":"<hidden>"}', '{"i":"k1","p":"hosts_allow","v":"<hidden>"}']);
  t.deepEqual(byFunc('login'), ['{"u":"op","pass":"<hidden>"}', '{"user":"op","password":"<hidden>"}']);
  t.deepEqual(byFunc('logn'), ['{"u":"<hidden>","p":"<hidden>"}']);
  const lines = (await apiLines(client)).map((r) => r.msg);
  t.true(lines.includes('API request masterkey@127.0.0.1:set_key_prop, i="k1" p="<hidden>"'));
  t.true(lines.includes('API request masterkey@127.0.0.1:create_user, u="x" password="<hidden>" a="k1"'));
  t.true(lines.includes('API request plain@127.0.0.1:create_user, u="y" p="<hidden>" a="k1"'));
  t.true(lines.includes('API request masterkey@127.0.0.1:set_cvar, i="c" v={"apikey":"<hidden>"}'));

  await until('the API call log written', () => sqlite3(userDbOf(dir), "SELECT count(*) AS n FROM api_log WHERE func = 'test'")[0]?.n === 1);
  const everything = [
    JSON.stringify(calls), JSON.stringify(await client.ok('log_get', { ...m, l: 10, n: 10_000 })), controllerLog(dir),
    fs.readFileSync(userDbOf(dir)).toString('latin1'),
  ];
  for (const [i, text] of everything.entries()) {
    // S[1] became k1's value: the user db holds it as the key
    for (const s of [...S, Keys.master, Keys.plain]) {
      if (i < 3 || s !== S[1]) t.false(text.includes(s), `${s} in ${['api_log_get', 'log_get', 'the log file', 'the user db'][i]}`);
    }
  }
});
