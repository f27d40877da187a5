import test from 'ava';
import { startController, Keys, assertNoCache } from '../helpers/controller';
import { notifierFiles, stats } from '../helpers/notifiers';
import { until } from '../helpers/wait';

/**
 * EVA ICS 3.3's GenericAPI (test, login, logout, set_token_readonly,
 * state_history, state_log) answers on every direct path: /uc-api/ as well
 * as /sys-api/, with the same answer (its UC EI signs in with /uc-api/test).
 */

const m = { k: Keys.master };
type Via = 'get' | 'post';

/** The answer of a direct call, its per-call values (times, thread count) masked. */
async function call(url: string, via: Via, api: string, fn: string, params: Record<string, unknown>) {
  const r = via === 'get'
    ? await fetch(`${url}/${api}/${fn}?${new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]))}`)
    : await fetch(`${url}/${api}/${fn}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(params) });
  const body = JSON.parse(await r.text(), (k, v) => (['time', 'uptime', 'threads', 'token'].includes(k) ? `<${typeof v}>` : v));
  return { status: r.status, headers: r.headers, body };
}

test('the GenericAPI functions answer on /uc-api/ and /sys-api/ alike (GET and POST); the others only on their own path', async (t) => {
  const { client, url } = await startController(t, {
    files: notifierFiles({ db_1: { type: 'db', db: 'history.db', keep: 86400, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] } }),
  });
  await client.ok('create_user', { ...m, u: 'op', p: 'secret', a: 'ops' });
  await client.ok('create', { ...m, i: 'sensor:env/t1' });
  await client.ok('update', { ...m, i: 'sensor:env/t1', s: 1, v: '21.5' });
  await until('history written', async () => (await stats(client, Keys.master, 'db_1')).sent >= 2, 20_000);

  for (const via of ['get', 'post'] as Via[]) {
    // test, and the history functions (a master key; a key of another kind)
    for (const [fn, params] of [
      ['test', m], ['test', { k: Keys.ops }], ['test', { k: Keys.plain }],
      ['state_history', { ...m, i: 'sensor:env/t1', s: 0 }], ['state_log', { ...m, i: 'sensor:env/t1', s: 0 }],
    ] as [string, Record<string, unknown>][]) {
      const sys = await call(url, via, 'sys-api', fn, params);
      const uc = await call(url, via, 'uc-api', fn, params);
      t.is(uc.status, 200, `${via} /uc-api/${fn}`);
      t.deepEqual(uc.body, sys.body, `${via} ${fn}: the same answer on both paths`);
      assertNoCache(t, uc.headers, 'application/json', `${via} /uc-api/${fn}`);
    }
    const history = await call(url, via, 'sys-api', 'state_log', { ...m, i: 'sensor:env/t1', s: 0 });
    t.true(history.body.some((r: { value: unknown }) => r.value === 21.5 || r.value === '21.5'), `${via}: /sys-api/state_log reads the history`);

    // login on one path, the token used, made read-only and logged out on the other
    for (const [home, other] of [['sys-api', 'uc-api'], ['uc-api', 'sys-api']]) {
      const r = await fetch(`${url}/${home}/login?u=op&p=secret`);
      t.is(r.status, 200, `${via} /${home}/login`);
      const { token } = await r.json() as { token: string };
      const ro = await call(url, via, other, 'set_token_readonly', { k: token });
      t.is(ro.status, 200, `${via} /${other}/set_token_readonly`);
      t.is((await client.ok('test', { k: token })).aci.token_mode, 'readonly');
      t.is((await call(url, via, other, 'logout', { k: token })).status, 200, `${via} /${other}/logout`);
      t.is((await client.rpc('test', { k: token })).error?.code, 2, 'logged out');
    }
    // a wrong key is refused on the other path as on the home one
    t.is((await call(url, via, 'uc-api', 'test', { k: 'wrong' })).status, 403);
  }

  // functions of one API stay on their path: 405 on the other, as before
  t.is((await client.get('get_cvar', m, {}, 'uc-api')).status, 405);
  t.is((await client.get('state', { ...m, i: 'sensor:env/t1' }, {}, 'sys-api')).status, 405);
  t.is((await client.get('state', { ...m, i: 'sensor:env/t1' }, {}, 'uc-api')).status, 200);
});
