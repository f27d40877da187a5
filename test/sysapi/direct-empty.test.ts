import test from 'ava';
import { startController, Keys } from '../helpers/controller';

const m = { k: Keys.master };

test('an empty answer on the direct API is 204 with no body and no type, as EVA ICS 3.3.2 (get_cvar of no cvars); JSON RPC answers {}', async (t) => {
  const { client, url } = await startController(t);
  for (const r of [
    await fetch(`${url}/sys-api/get_cvar?k=${Keys.master}`),
    await fetch(`${url}/sys-api/get_cvar`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(m) }),
  ]) {
    t.is(r.status, 204);
    t.is(await r.text(), '');
    t.is(r.headers.get('content-type'), null);
    t.is(r.headers.get('content-length'), null, 'no Content-Length on a 204');
    t.is(r.headers.get('cache-control'), 'no-cache, no-store, must-revalidate');
    t.is(r.headers.get('pragma'), 'no-cache');
    t.is(r.headers.get('expires'), '0');
  }
  t.deepEqual(await client.ok('get_cvar', m), {});
  // with a cvar the answer has a body again
  await client.ok('set_cvar', { ...m, i: 'x', v: '1' });
  const r = await client.get('get_cvar', m);
  t.is(r.status, 200);
  t.deepEqual(r.body, { x: '1' });
  // an answer of nothing (true) is still {result: "OK"}
  t.deepEqual((await client.get('set_cvar', { ...m, i: 'x' })).body, { result: 'OK' });
  t.is((await fetch(`${url}/sys-api/get_cvar?k=${Keys.master}`)).status, 204, 'no cvars again');
});
