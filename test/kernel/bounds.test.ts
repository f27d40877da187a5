import 'reflect-metadata';
import test from 'ava';
import { positiveBounds } from '../../core/config';
import { NetworkList } from '../../core/auth/networks';

test('ini bounds take positive integers only; anything else keeps the default', (t) => {
  const defaults = { most: 10, longest: 20, other: 30 };
  t.deepEqual(positiveBounds(defaults, { most: '7', longest: 3 }), { most: 7, longest: 3, other: 30 });
  for (const bad of ['0', '-1', '1.5', 'abc', '', 'Infinity', true, null]) {
    t.deepEqual(positiveBounds(defaults, { most: bad }), defaults, String(bad));
  }
  t.deepEqual(positiveBounds(defaults, undefined), defaults);
  // keys that are no bound are not taken in
  t.deepEqual(positiveBounds(defaults, { unknown: '5' }), defaults);
});

test('the address cache of a network list stays bounded and its answers stay right past the bound', (t) => {
  const list = new NetworkList(['10.0.0.0/8', 'fd00::/8']);
  const cache = (list as unknown as { cache: Map<string, boolean> }).cache;
  let most = 0;
  for (let i = 0; i < 5000; i++) {
    const inside = `10.${(i >> 8) & 255}.${i & 255}.1`;
    const outside = `11.${(i >> 8) & 255}.${i & 255}.1`;
    t.true(list.has(inside), inside);
    t.false(list.has(outside), outside);
    most = Math.max(most, cache.size);
  }
  t.true(most <= 1024, `cache held ${most} addresses`);
  t.true(list.has('::ffff:10.1.2.3'));
  t.true(list.has('fd00::1'));
  t.false(list.has('fe80::1'));
  // an address nobody knows (the MQTT API) is admitted only by a list that admits every address
  t.false(list.has('broker'));
  t.true(new NetworkList(['0.0.0.0/0']).has('broker'));
});
