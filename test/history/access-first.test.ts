import test from 'ava';
import { startController, Keys } from '../helpers/controller';
import { keysIni } from '../helpers/keys';
import { notifierFiles } from '../helpers/notifiers';

/*
 * state_history decides access to the items before it looks for the
 * history notifier (or the item of a full id): a key without rights gets
 * the same answer whether the notifier, or the item, exists or not.
 */

const ONE = 'oneoneoneoneoneoneoneoneoneoneoneoneoneoneoneoneoneoneoneoneone1';
const KEYS_INI = keysIni({
  masterkey: { key: Keys.master, master: true, hosts_allow: '127.0.0.1' },
  one: { key: ONE, items: 'sensor:env/t1', hosts_allow: '127.0.0.1' },
});

test('state_history: a key without rights to the item gets 2 / 403 whether the history notifier or the item exists or not', async (t) => {
  const { client } = await startController(t, {
    keysIni: KEYS_INI,
    files: notifierFiles({ db_1: { type: 'db', db: 'history.db', keep: 86400, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] } }),
  });
  for (const i of ['sensor:env/t1', 'sensor:env/t2']) await client.ok('create', { k: Keys.master, i });
  const answer = async (params: Record<string, unknown>) => {
    const rpc = await client.rpc('state_history', { k: ONE, ...params });
    const direct = await client.get('state_history', { k: ONE, ...params }, {}, 'uc-api');
    return { code: rpc.error?.code, message: rpc.error?.message, status: direct.status, text: direct.body._error };
  };
  const refused = await answer({ i: 'sensor:env/t2' });
  t.like(refused, { code: 2, status: 403 });
  // the notifier named does not exist: the same answer, word for word
  t.deepEqual(await answer({ i: 'sensor:env/t2', a: 'db_9' }), refused);
  t.deepEqual(await answer({ i: 'sensor:env/t1,sensor:env/t2', w: '5T', a: 'db_9' }), await answer({ i: 'sensor:env/t1,sensor:env/t2', w: '5T' }));
  // a full id: refused alike whether an item has it or not, whatever the notifier
  const fullId = await answer({ i: 'env/t2' });
  t.like(fullId, { code: 2, status: 403 });
  for (const params of [{ i: 'env/nope' }, { i: 'env/t2', a: 'db_9' }, { i: 'env/nope', a: 'db_9' }]) {
    t.deepEqual((({ code, status }) => ({ code, status }))(await answer(params)), { code: 2, status: 403 }, JSON.stringify(params));
  }
  // with rights: the item is read, and only then is a missing notifier told
  t.deepEqual((await client.rpc('state_history', { k: ONE, i: 'sensor:env/t1' })).error, undefined);
  t.deepEqual((await client.rpc('state_history', { k: ONE, i: 'env/t1' })).error, undefined);
  t.like(await answer({ i: 'sensor:env/t1', a: 'db_9' }), { code: 1, status: 404 });
  t.like(await answer({ i: 'env/t1', a: 'db_9' }), { code: 1, status: 404 });
  t.is((await client.rpc('state_history', { k: Keys.master, i: 'env/nope' })).error?.code, 1, 'a key that could read it learns it does not exist');
  t.is((await client.rpc('state_history', { k: Keys.master, i: 'nope' })).error?.code, 11);
});
