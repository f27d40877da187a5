import test from 'ava';
import { startController, Keys } from '../helpers/controller';
import { Err } from '../sysapi/expect';

const m = { k: Keys.master };

test('wrong keys are throttled per address (IPv6 per /64); valid keys of other addresses are not', async (t) => {
  const { client } = await startController(t, { ini: { webapi: { x_real_ip: true, login_free_failures: 3, login_delay: 30 } } });
  const from = (ip: string) => ({ 'X-Real-IP': ip });
  const wrong = 'wrongwrongwrongwrongwrong';
  for (let i = 0; i < 3; i++) {
    const r = await client.rpc('test', { k: wrong }, from('10.0.0.1'));
    t.is(r.error?.code, Err.denied.code);
    t.is(r.error?.message, 'invalid key');
  }
  // past the free failures: refused without looking at the key, the valid one included
  const held = await client.rpc('test', m, from('10.0.0.1'));
  t.is(held.error?.code, Err.denied.code);
  t.regex(held.error!.message, /too many failed key checks/);
  t.is((await client.get('test', m, from('10.0.0.1'))).status, 403, 'direct too');
  // another address is not affected
  t.is((await client.rpc('test', m, from('10.0.0.2'))).error, undefined);
  // an IPv6 client counts by its /64: other addresses of that /64 wait too, another /64 does not
  for (let i = 0; i < 3; i++) await client.rpc('test', { k: wrong }, from(`2001:db8:1:2::${i + 1}`));
  t.regex((await client.rpc('test', m, from('2001:db8:1:2::ffff'))).error?.message ?? '', /too many failed key checks/);
  t.is((await client.rpc('test', m, from('2001:db8:1:3::1'))).error, undefined);
});

test('a key used outside its hosts_allow gets the answer of an unknown key, and counts as a failure', async (t) => {
  const { client } = await startController(t, { ini: { webapi: { x_real_ip: true, login_free_failures: 2, login_delay: 30 } } });
  const outside = { 'X-Real-IP': '10.9.9.9' };
  const unknown = await client.rpc('test', { k: 'unknownunknownunknown' }, outside);
  const known = await client.rpc('test', { k: Keys.ops }, outside); // ops: 127.0.0.1 and ::1 only
  t.deepEqual(known.error, unknown.error);
  t.regex((await client.rpc('test', { k: Keys.master }, outside)).error?.message ?? '', /too many failed key checks/);
});

test('set_key_prop p=key refuses a value shorter than 16 characters', async (t) => {
  const { client } = await startController(t);
  await client.ok('create_key', { ...m, i: 'k1' });
  t.is((await client.rpc('set_key_prop', { ...m, i: 'k1', p: 'key', v: 'short-value-1234'.slice(0, 15) })).error?.code, Err.invalid.code);
  t.is((await client.rpc('set_key_prop', { ...m, i: 'k1', p: 'key', v: 'short-value-1234' })).error, undefined);
  t.is((await client.ok('test', { k: 'short-value-1234' })).acl.key_id, 'k1');
  // create_key makes its own value: 64 characters
  t.regex((await client.ok('create_key', { ...m, i: 'k2' })).key, /^.{64}$/);
});
