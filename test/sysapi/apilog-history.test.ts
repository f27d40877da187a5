import test from 'ava';
import { startController, Keys, type Client } from '../helpers/controller';
import { Err } from '../helpers/api-errors';
import { Transports, errOf, okVia, pySqlite, sqlite3, userDbOf, via } from '../helpers/accounts';
import { until } from '../helpers/wait';
import { readFunctions } from '../../plugins/sysapi/apilog/reads';

const m = { k: Keys.master };
// enough free failures that every wrong login below is refused for its credentials, not by the throttle
const ON = { server: { keep_api_log: 3600, api_log_write_interval: 0.1 }, webapi: { login_free_failures: 100 } };
const basic = (u: string, p: string) => ({ Authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}` });
const row = (r: any) => [r.func, r.u, r.ki, r.status];
const without = (rs: any[], fn = 'api_log_get') => rs.filter((r) => r.func !== fn);

/** Users op and ed on key plain (no rights of its own), logged in and out, some calls refused. */
async function history(client: Client) {
  await client.ok('create_user', { ...m, u: 'op', p: 'secret-op', a: 'plain' });
  await client.ok('create_user', { ...m, u: 'ed', p: 'secret-ed', a: 'plain' });
  const op = (await client.ok('login', { u: 'op', p: 'secret-op' })).token;
  await client.rpc('login', { u: 'op', p: 'Wrong-Password-1' });
  await client.rpc('login', {}, basic('ed', 'Wrong-Password-2'));
  const ed = (await client.rpc('login', {}, basic('ed', 'secret-ed'))).result.token;
  await client.ok('test', { k: op });
  await client.rpc('set_cvar', { k: op, i: 'x', v: '1' });
  await client.ok('set_cvar', { ...m, i: 'x', v: '2' });
  await client.ok('get_cvar', { ...m, i: 'x' });
  await client.ok('test', { k: ed });
  await client.ok('logout', { k: op });
  return { op, ed };
}

test('logins are recorded: the user and key of an accepted one, the login a refused one tried, the address; never the password', async (t) => {
  const { client } = await startController(t, { ini: ON });
  await client.ok('create_user', { ...m, u: 'op', p: 'secret-op', a: 'plain' });
  await client.ok('login', { u: 'op', p: 'secret-op' });
  await client.rpc('login', { u: 'op', p: 'Wrong-Password-1' });
  await client.rpc('login', { u: 'nobody', p: 'Wrong-Password-2' });
  await client.post('login', {}, basic('op', 'secret-op'));
  await client.post('login', {}, basic('ed', 'Wrong-Password-3'));
  await client.ok('login', { k: Keys.ops });
  await client.rpc('login', { k: 'Wrong-Key-4' });
  const logins = without(await client.ok('api_log_get', { ...m, f: 'func=login' }));
  t.deepEqual(logins.map(row), [
    ['login', 'op', 'plain', 'OK'], ['login', 'op', null, 'AccessDenied'], ['login', 'nobody', null, 'AccessDenied'],
    ['login', 'op', 'plain', 'OK'], ['login', 'ed', null, 'AccessDenied'], ['login', null, 'ops', 'OK'], ['login', null, null, 'AccessDenied'],
  ]);
  for (const r of logins) t.is(r.ip, '127.0.0.1');
  t.is(logins[1].params, '{"u":"op","p":"<hidden>"}');
  const text = JSON.stringify(logins);
  for (const secret of ['secret-op', 'Wrong-Password', 'Wrong-Key', Keys.ops]) t.false(text.includes(secret), secret);
  // refused logins of a login: by user, refused only
  t.deepEqual(without(await client.ok('api_log_get', { ...m, r: true, f: { u: 'op' } })).map(row), [['login', 'op', null, 'AccessDenied']]);
});

for (const tr of Transports) {
  test(`api_log_get over ${tr}: refused only, changes only, by user, key, function, address and time, paged by a cursor`, async (t) => {
    const { client } = await startController(t, { ini: ON });
    await history(client);
    const get = async (p: Record<string, unknown>) => without(await okVia(client, tr, 'api_log_get', { ...m, ...p }));
    const reads = readFunctions((await client.ok('rpc.discover', {})).methods);
    const all = await get({});
    t.true(all.length >= 12);

    t.deepEqual((await get({ r: true })).map(row), [
      ['login', 'op', null, 'AccessDenied'], ['login', 'ed', null, 'AccessDenied'], ['set_cvar', 'op', 'plain', 'AccessDenied'],
    ]);
    // changes only: no test, get_cvar (nor api_log_get); logins, logouts and refused changes stay
    const changes = await get({ c: true });
    t.true(reads.includes('test') && reads.includes('get_cvar'));
    t.false(changes.some((r: any) => reads.includes(r.func)));
    t.deepEqual(changes.filter((r: any) => r.u !== null).map(row), [
      ['login', 'op', 'plain', 'OK'], ['login', 'op', null, 'AccessDenied'], ['login', 'ed', null, 'AccessDenied'], ['login', 'ed', 'plain', 'OK'],
      ['set_cvar', 'op', 'plain', 'AccessDenied'], ['logout', 'op', 'plain', 'OK'],
    ]);
    t.deepEqual((await get({ c: true, r: true, f: { func: 'set_cvar' } })).map(row), [['set_cvar', 'op', 'plain', 'AccessDenied']]);
    // by user, key, function, address (with the other filters); time range
    t.deepEqual((await get({ f: { u: 'op', ki: 'plain', func: ['test', 'logout'] } })).map(row), [['test', 'op', 'plain', 'OK'], ['logout', 'op', 'plain', 'OK']]);
    t.is((await get({ f: { ip: '127.0.0.1' } })).length, all.length);
    t.deepEqual(await get({ f: { ip: '10.9.9.9' } }), []);
    const setM = all.find((r: any) => r.func === 'set_cvar' && r.ki === 'masterkey');
    t.deepEqual((await get({ s: setM.t, e: setM.t, c: true })).map(row), [['set_cvar', null, 'masterkey', 'OK']]);

    // pages of 3 back from the newest, each from the id of the last page's oldest: every record once, in order,
    // whatever was recorded meanwhile (these api_log_get calls are)
    const f = { func: ['login', 'logout', 'test', 'set_cvar', 'get_cvar', 'create_user'] };
    const expected = (await get({ f })).map((r: any) => r.id);
    const pages: string[][] = [];
    let b: string | undefined;
    for (;;) {
      const page = await okVia(client, tr, 'api_log_get', { ...m, n: 3, f, ...(b ? { b } : {}) });
      if (page.length === 0) break;
      await client.ok('set_cvar', { ...m, i: 'y', v: String(pages.length) }); // a newer record matching the filter
      pages.push(page.map((r: any) => r.id));
      b = page[0].id;
    }
    t.true(pages.slice(0, -1).every((p) => p.length === 3));
    t.deepEqual(pages.reverse().flat(), expected);
    t.deepEqual(await okVia(client, tr, 'api_log_get', { ...m, b: '00000000-0000-4000-8000-000000000000' }), [], 'an id not in the log: nothing older');
    t.is((await via(client, tr, 'api_log_get', { ...m, b: '' })).error, errOf(tr, Err.invalid));
  });
}

test('a user of a key that is not master sees only their own calls, whatever they filter, refused only and changes only too', async (t) => {
  const { client } = await startController(t, { ini: ON });
  const { ed } = await history(client);
  const mine = async (p: Record<string, unknown>) => without(await client.ok('api_log_get', { k: ed, ...p })).map(row);
  const own = [['login', 'ed', 'plain', 'OK'], ['test', 'ed', 'plain', 'OK']];
  t.deepEqual(await mine({}), own);
  t.deepEqual(await mine({ f: { u: 'op' } }), own, 'another user of the same key: the filter cannot widen the view');
  t.deepEqual(await mine({ f: { ki: 'masterkey' } }), own);
  t.deepEqual(await mine({ r: true }), [], 'the refused login that tried ed is no call of ed\'s');
  t.deepEqual(await mine({ c: true }), [own[0]]);
  const page = without(await client.ok('api_log_get', { k: ed, n: 1, f: 'func=test|login' }));
  t.deepEqual(page.map(row), [own[1]]);
  t.deepEqual(without(await client.ok('api_log_get', { k: ed, n: 1, b: page[0].id, f: 'func=test|login' })).map(row), [own[0]]);
  // the cursor of a record that is not theirs gives nothing of it
  const others = without(await client.ok('api_log_get', { ...m, f: { u: 'op', func: 'logout' } }));
  t.deepEqual(without(await client.ok('api_log_get', { k: ed, b: others[0].id })).map(row), own, 'only their own records before it');
});

test('table api_log of the user db has an index on t: a page of the newest records does not read the whole table', async (t) => {
  const { client, dir } = await startController(t, { ini: ON });
  await client.ok('test', m);
  await until('written', () => sqlite3(userDbOf(dir), 'SELECT count(*) AS n FROM api_log')[0]?.n === 1);
  const plan = pySqlite(userDbOf(dir), 'EXPLAIN QUERY PLAN SELECT id FROM api_log ORDER BY t DESC, rowid DESC LIMIT 51').map((r) => r.detail);
  t.true(plan.some((d) => /USING INDEX api_log_t/.test(String(d))), plan.join('; '));
  t.false(plan.some((d) => /TEMP B-TREE/.test(String(d))), 'no sort of every row');
});

test('changes only leaves out exactly what the declarations say only reads, but the session functions', async (t) => {
  const { client } = await startController(t);
  const methods = (await client.ok('rpc.discover', {})).methods as { name: string; 'x-changes'?: boolean }[];
  const reads = readFunctions(methods);
  // a function that changes something is never left out, the session's are kept
  t.deepEqual(reads.filter((f) => methods.find((x) => x.name === f)?.['x-changes'] !== false), []);
  for (const f of ['login', 'logout', 'set_token_readonly', 'set_cvar', 'create_key']) t.false(reads.includes(f), f);
  for (const f of ['test', 'get_cvar', 'list_keys', 'api_log_get', 'state']) t.true(reads.includes(f), f);
});
