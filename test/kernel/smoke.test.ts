import test from 'ava';
import { startController, Keys } from '../helpers/controller';

test('test answers through both transports', async (t) => {
  const { client } = await startController(t);
  const direct = await client.get('test', { k: Keys.master });
  t.is(direct.status, 200);
  t.is(direct.body.result, 'OK');
  t.deepEqual(direct.body.acl, { key_id: 'masterkey', master: true });
  const rpc = await client.rpc('test', { k: Keys.master });
  t.is(rpc.result.ok, true);
  t.is(rpc.result.product_code, 'uc');
});
