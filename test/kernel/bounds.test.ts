import 'reflect-metadata';
import test from 'ava';
import { positiveBounds } from '../../core/config';

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
