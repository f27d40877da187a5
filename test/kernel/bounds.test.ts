import 'reflect-metadata';
import test from 'ava';
import { NetworkList } from '../../core/auth/networks';

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
