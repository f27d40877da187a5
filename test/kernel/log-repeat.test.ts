import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { startController } from '../helpers/controller';
import { Logger } from '../../core/log';
import { RepeatLog } from '../../core/repeat-log';
import { until } from '../helpers/wait';

/** A RepeatLog on a real controller's log (interval 0.5 s), and the lines of its module. */
async function setup(t: any) {
  const { ctl, dir } = await startController(t);
  const log = ctl.get(Logger).module('repeat-test');
  const lines = () => fs.readFileSync(path.join(dir, 'controller.log'), 'utf8').split('\n').filter((l) => l.includes('repeat-test:'));
  return { r: new RepeatLog(log, () => 0.5), lines };
}

test('the first of a kind at once, then one line per interval with the count and the sources that sent most', async (t) => {
  const { r, lines } = await setup(t);
  r.note('frames refused', '10.0.0.1');
  t.is(lines().length, 1, 'the first at once');
  t.regex(lines()[0], /WARNING repeat-test: frames refused \(from 10\.0\.0\.1\); more are counted and logged once per 0\.5 s/);
  // 10 sources: the 5 first seen are named, the rest counted together
  for (let i = 0; i < 1000; i++) r.note('frames refused', `10.0.0.${(i % 10) + 1}`);
  t.is(lines().length, 1, 'nothing more until the interval ends');
  const summary = await until('the summary', () => lines()[1]);
  t.regex(summary, /frames refused: 1000 more in the last 0\.5 s \((10\.0\.0\.\d+: 100, ){5}others: 500\)$/);
  // a quiet interval ends the window: the next one is logged at once again (six intervals of margin)
  await new Promise((res) => setTimeout(res, 3000));
  r.note('frames refused', '10.0.0.9');
  t.regex(lines().filter((l) => l.includes('frames refused')).at(-1)!, /frames refused \(from 10\.0\.0\.9\); more are counted/);
});

test('kinds are bounded: past 32 they are summed up as one; flush logs what is counted', async (t) => {
  const { r, lines } = await setup(t);
  for (let k = 0; k < 40; k++) for (let i = 0; i < 3; i++) r.note(`kind ${k}`);
  const first = lines();
  t.is(first.length, 33, '32 kinds and one for all the others');
  t.true(first.some((l) => /other refused input; more are counted/.test(l)));
  r.flush();
  const all = lines();
  t.is(all.length, 66);
  t.true(all.some((l) => /kind 31: 2 more$/.test(l)));
  t.true(all.some((l) => /other refused input: 23 more$/.test(l)), 'kinds 32 to 39: 24, the first logged at once');
});
