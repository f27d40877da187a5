import fs from 'node:fs';
import test from 'ava';
import { startController, Keys } from '../helpers/controller';
import { Err } from '../helpers/api-errors';
import { Transports, errOf, okVia, via, sqlite3, userDbOf } from '../helpers/accounts';
import { until } from '../helpers/wait';

const m = { k: Keys.master };
const ON = { server: { keep_api_log: 3600, api_log_write_interval: 0.1 } };
const FIELDS = ['id', 't', 'tf', 'gw', 'ip', 'auth', 'u', 'utp', 'ki', 'func', 'params', 'status'];

/** Records of api_log_get for a caller, without the api_log_get calls themselves. */
async function records(client: any, k: string, p: Record<string, unknown> = {}) {
  return (await client.ok('api_log_get', { k, ...p })).filter((r: any) => r.func !== 'api_log_get');
}

for (const tr of Transports) {
  test(`every call is recorded (3.3's fields and statuses); api_log_get over ${tr}: filters s, e, n, t, f`, async (t) => {
    const { client } = await startController(t, { ini: ON });
    await client.ok('set_cvar', { ...m, i: 'x', v: '1' });
    await client.post('test', {}, { 'X-Auth-Key': Keys.ops });
    await client.rpc('get_cvar', { ...m, i: 'nope' });
    await client.rpc('set_cvar', { k: Keys.plain, i: 'x', v: '2' });
    await client.rpc('lock', { ...m, l: 'L', t: 'x' });
    await client.rpc('test', { k: 'wrong-key' });
    const all = await okVia(client, tr, 'api_log_get', m);
    const own = all.filter((r: any) => r.func !== 'api_log_get');
    t.deepEqual(own.map((r: any) => [r.func, r.ki, r.status]), [
      ['set_cvar', 'masterkey', 'OK'], ['test', 'ops', 'OK'], ['get_cvar', 'masterkey', 'ResourceNotFound'],
      ['set_cvar', 'plain', 'AccessDenied'], ['lock', 'masterkey', 'InvalidParameter'], ['test', null, 'AccessDenied'],
    ]);
    const first = own[0];
    t.deepEqual(Object.keys(first), FIELDS);
    t.like(first, { gw: 'http', ip: '127.0.0.1', auth: 'key', u: null, utp: null, params: '{"i":"x","v":"1"}' });
    t.regex(first.id, /^[0-9a-f-]{36}$/);
    t.true(first.tf >= first.t && Math.abs(first.t - Date.now() / 1000) < 60);
    for (let i = 1; i < own.length; i++) t.true(own[i].t >= own[i - 1].t, 'oldest first');

    // f as text and as an object; params matches a part; an empty u matches records without one
    const funcs = async (p: Record<string, unknown>) => (await okVia(client, tr, 'api_log_get', { ...m, ...p })).map((r: any) => r.func);
    t.deepEqual(await funcs({ f: 'func=set_cvar' }), ['set_cvar', 'set_cvar']);
    t.deepEqual(await funcs({ f: { func: 'set_cvar', status: 'OK' } }), ['set_cvar']);
    t.deepEqual(await funcs({ f: 'func=test|lock,ki=ops|masterkey' }), ['test', 'lock']);
    t.deepEqual(await funcs({ f: { params: '"v":"2"' } }), ['set_cvar']);
    t.deepEqual(await funcs({ f: 'ki=plain,u=' }), ['set_cvar']);
    for (const bad of ['func', 'nope=1', 'func=a=b']) t.is((await via(client, tr, 'api_log_get', { ...m, f: bad })).error, errOf(tr, Err.invalid), bad);
    // n: the newest n, oldest first
    const last2 = await okVia(client, tr, 'api_log_get', { ...m, n: 2, f: { func: ['test', 'lock', 'set_cvar', 'get_cvar'] } });
    t.deepEqual(last2.map((r: any) => r.func), ['lock', 'test']);
    // s and e: Unix seconds (number or text), ISO, or a time ago
    const s = own[2].t;
    t.deepEqual((await funcs({ s, e: own[3].t })), ['get_cvar', 'set_cvar']);
    t.deepEqual(await funcs({ s: String(s), e: new Date(own[3].t * 1000 + 1).toISOString() }), ['get_cvar', 'set_cvar']);
    t.is((await funcs({ s: '1H' })).filter((f: string) => f !== 'api_log_get').length, own.length);
    t.deepEqual(await funcs({ e: '1H' }), []);
    t.is((await via(client, tr, 'api_log_get', { ...m, s: 'yesterday-ish' })).error, errOf(tr, Err.invalid));
    // t=iso: times as ISO 8601 with the zone offset
    const iso = await okVia(client, tr, 'api_log_get', { ...m, t: 'iso', n: 1, f: 'func=lock' });
    t.regex(iso[0].t, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$/);
    t.is(Date.parse(iso[0].t) / 1000, Math.floor(own[4].t * 1000) / 1000);
  });
}

test('a master sees all, a key its own calls, a token its user\'s; f cannot widen that', async (t) => {
  const { client } = await startController(t, { ini: { ...ON, webapi: { login_free_failures: 100 } } });
  await client.ok('create_user', { ...m, u: 'op', p: 'secret', a: 'ops' });
  await client.ok('create_user', { ...m, u: 'ed', p: 'secret', a: 'ops' });
  const op = (await client.ok('login', { u: 'op', p: 'secret' })).token;
  const ed = (await client.ok('login', { u: 'ed', p: 'secret' })).token;
  await client.ok('test', { k: op });
  await client.ok('test', { k: ed });
  await client.ok('test', { k: Keys.ops });
  await client.ok('test', { k: Keys.plain });
  await client.ok('test', m);
  const tests = (rs: any[]) => rs.filter((r) => r.func === 'test').map((r) => [r.auth, r.u, r.ki]);
  t.deepEqual(tests(await records(client, Keys.master)), [
    ['token', 'op', 'ops'], ['token', 'ed', 'ops'], ['key', null, 'ops'], ['key', null, 'plain'], ['key', null, 'masterkey'],
  ]);
  // a key: every call made with it, its users' tokens included (3.3: ki)
  t.deepEqual(tests(await records(client, Keys.ops)), [['token', 'op', 'ops'], ['token', 'ed', 'ops'], ['key', null, 'ops']]);
  t.deepEqual(tests(await records(client, Keys.plain)), [['key', null, 'plain']]);
  // a token: its user's only
  t.deepEqual(tests(await records(client, op)), [['token', 'op', 'ops']]);
  t.deepEqual(tests(await records(client, op, { f: { u: 'ed' } })), [['token', 'op', 'ops']]);
  t.deepEqual(tests(await records(client, Keys.plain, { f: 'ki=masterkey' })), [['key', null, 'plain']]);
  t.is((await client.rpc('api_log_get', {})).error?.code, Err.denied.code, 'a valid key is needed');
});

test('secrets are never recorded: passwords, key values, tokens, file contents, cmd input', async (t) => {
  const { client, dir } = await startController(t, { ini: { ...ON, sysapi: { file_management: true }, webapi: { login_free_failures: 100 } } });
  const S = ['Pass-Word-One', 'Pass-Word-Two', 'Key-Value-Three-0123456789', 'File-Content-Four', 'Stdin-Five'];
  await client.ok('create_key', { ...m, i: 'k1' });
  await client.ok('create_user', { ...m, u: 'op', p: S[0], a: 'k1' });
  await client.ok('set_user_password', { ...m, u: 'op', p: S[1] });
  const { token } = await client.ok('login', { u: 'op', p: S[1] });
  await client.rpc('login', { a: token, u: 'op', p: S[1] });
  await client.ok('set_key_prop', { ...m, i: 'k1', p: 'key', v: S[2] });
  await client.ok('file_put', { ...m, i: 'f.txt', m: S[3] });
  await client.rpc('cmd', { ...m, c: 'nope', s: S[4] });
  const again = (await client.ok('login', { k: S[2] })).token;
  await client.ok('drop_tokens', { ...m, a: again });
  const { key } = await client.ok('regenerate_key', { ...m, i: 'k1' });
  const rs = await records(client, Keys.master);
  t.deepEqual(rs.map((r: any) => r.func), ['create_key', 'create_user', 'set_user_password', 'login', 'login', 'set_key_prop', 'file_put', 'cmd',
    'login', 'drop_tokens', 'regenerate_key']);
  const text = JSON.stringify(rs);
  for (const secret of [...S, Keys.master, token, again, key]) t.false(text.includes(secret), secret);
  t.true(rs.every((r: any) => !/"k"/.test(r.params)));
  t.is(rs.find((r: any) => r.func === 'create_user').params, '{"u":"op","p":"<hidden>","a":"k1"}');
  t.is(rs.find((r: any) => r.func === 'set_key_prop').params, '{"i":"k1","p":"key","v":"<hidden>"}');
  t.is(rs.find((r: any) => r.func === 'file_put').params, '{"i":"f.txt","m":"<hidden>"}');
  // nor in the user db file
  await until('written', () => sqlite3(userDbOf(dir), "SELECT count(*) AS n FROM api_log WHERE func = 'regenerate_key'")[0]?.n === 1);
  const file = fs.readFileSync(userDbOf(dir)).toString('latin1');
  for (const secret of [...S, Keys.master, token, again]) t.false(file.includes(secret), secret);
});

test('params: strings cut at 100 characters, the whole at 512', async (t) => {
  const { client } = await startController(t, { ini: ON });
  await client.rpc('set_cvar', { ...m, i: 'long', v: 'x'.repeat(1000) });
  await client.rpc('set_cvar', { ...m, i: 'y'.repeat(90), v: 'z'.repeat(90), a: 'a'.repeat(90), b: 'b'.repeat(90), c: 'c'.repeat(90), d: 'd'.repeat(90), e: 'e'.repeat(90) });
  const [one, two] = await records(client, Keys.master);
  t.is(one.params, `{"i":"long","v":"${'x'.repeat(100)}..."}`);
  t.is(two.params.length, 512);
  t.true(two.params.startsWith(`{"i":"${'y'.repeat(90)}","v":"${'z'.repeat(90)}"`));
  t.is(two.status, 'InvalidParameter');
});

test('keep_api_log = 0 (the default): nothing is recorded, no user db is made', async (t) => {
  const { client, dir } = await startController(t);
  await client.ok('test', m);
  await client.ok('set_cvar', { ...m, i: 'x', v: '1' });
  t.deepEqual(await client.ok('api_log_get', m), []);
  t.false(fs.existsSync(userDbOf(dir)));
});
