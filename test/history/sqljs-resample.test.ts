import test from 'ava';
import path from 'node:path';
import type { HistoryRow } from '../../plugins/notifiers/db/schema';
import { bucketize } from '../../plugins/notifiers/db/resample';
import { history, tmpDir, now } from '../helpers/history-db';

/**
 * The sql.js history computes a fill's intervals in its own thread (SQLite's
 * GROUP BY): they must equal what notifiers/db/resample.ts bucketize makes of the
 * same rows, for every kind of value 3.3 stored (numbers as text, padded,
 * exponents, '', NULL, words) and status (NULL, -1, 0, 1), at several steps.
 */
test('sql.js fill intervals equal those computed from the rows, whatever the values', async (t) => {
  const h = history(t, { file: path.join(tmpDir(t), 'history.db') });
  await h.start();
  const t0 = Math.floor(now() / 3600) * 3600 - 7200;
  const values = ['20.5', ' 7 ', '1e3', '', null, 'text', '-.5', '+3.', '0x10', '12', 'NaN', '5 5'];
  const statuses = [1, 0, -1, null, 1, 2];
  const rows: HistoryRow[] = [];
  for (let i = 0; i < 2000; i++) rows.push(['', t0 + i * 3.7 + (i % 3) / 10, 'sensor:g/s', statuses[i % statuses.length], values[(i * 7) % values.length]]);
  rows.push(['', t0 + 100, 'sensor:g/other', 1, '999'], ['other-space', t0 + 100, 'sensor:g/s', 1, '999']);
  for (let i = 0; i < rows.length; i += 500) await h.write(rows.slice(i, i + 500).reverse()); // not in time order
  const start = t0 + 61.5;
  const end = t0 + 6000;
  for (const step of [60, 300, 3600]) {
    const fromRows = bucketize((await h.query({ space: '', oids: ['sensor:g/s'], start, end })).filter((r) => r[1] > start), step);
    const got = await h.resample('', 'sensor:g/s', start, end, step);
    t.is(got.length, fromRows.length, `step ${step}`);
    got.forEach((b, i) => {
      const want = fromRows[i];
      t.deepEqual([b[0], b[2], b[4], b[5], b[6]], [want[0], want[2], want[4], want[5], want[6]], `step ${step}, interval ${i}`);
      for (const k of [1, 3] as const) {
        if (want[k] === null) t.is(b[k], null);
        else t.true(Math.abs((b[k] as number) - want[k]!) < 1e-9, `step ${step}, interval ${i}, mean ${k}: ${b[k]} != ${want[k]}`);
      }
    });
    t.true(got.some((b) => b[4] > 0 && b[4] < b[2]), 'some values are not numbers'); // the test covers the numeric filter
  }
});
