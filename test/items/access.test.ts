import test from 'ava';
import { groupMatches } from '../../core/toolkit/group-pattern';

test('group patterns: # all, a/# a and below, + one level, else exact', (t) => {
  const cases: [string, string, boolean][] = [
    ['#', 'a', true], ['#', 'a/b/c', true],
    ['a/#', 'a', true], ['a/#', 'a/b', true], ['a/#', 'a/b/c', true], ['a/#', 'ab', false], ['a/#', 'b/a', false],
    ['a/+', 'a/b', true], ['a/+', 'a', false], ['a/+', 'a/b/c', false], ['+/b', 'x/b', true],
    ['a/b', 'a/b', true], ['a/b', 'a', false], ['a', 'a/b', false], ['a/+/#', 'a/b', true], ['a/+/#', 'a', false],
  ];
  for (const [p, g, want] of cases) t.is(groupMatches(p, g), want, `${p} vs ${g}`);
});
