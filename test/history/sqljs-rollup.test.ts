import test, { type ExecutionContext } from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import type { HistoryRow } from '../../plugins/notifiers/db/schema';
import type { History } from '../../plugins/notifiers/db/history';
import { bucketize } from '../../plugins/notifiers/db/resample';
import { history, tmpDir, now, run, sqlite3Lines } from '../helpers/history-db';
import { EVA33_SCHEMA } from '../helpers/eva33-history';

/**
 * The sql.js history's per-minute rollup (rollup.ts) must leave every fill
 * as the rows make it: built from a 3.3 file that had none, and kept through
 * replaced rows, the row bound and `keep`.
 */
const OID = 'sensor:g/s';
const values = ['20.5', ' 7 ', '1e3', '', null, 'text', '-.5', '12', '5 5'];
const statuses = [1, 0, -1, null, 1, 2];

/** The fill from the history's own intervals equals the one computed here from its rows, at steps that use the rollup and one that does not. */
async function sameAsRows(t: ExecutionContext, h: History, start: number, end: number): Promise<void> {
  for (const step of [30, 60, 300, 3600]) {
    const fromRows = bucketize((await h.query({ space: '', oids: [OID], start, end })).filter((r) => r[1] > start), step);
    const got = await h.resample('', OID, start, end, step);
    t.is(got.length, fromRows.length, `step ${step}`);
    got.forEach((b, i) => {
      const want = fromRows[i];
      t.deepEqual([b[0], b[2], b[4], b[5], b[6]], [want[0], want[2], want[4], want[5], want[6]], `step ${step}, interval ${i}`);
      for (const k of [1, 3] as const) {
        if (want[k] === null) t.is(b[k], null);
        else t.true(Math.abs((b[k] as number) - want[k]!) < 1e-9, `step ${step}, interval ${i}: ${b[k]} != ${want[k]}`);
      }
    });
  }
}

test('an EVA ICS 3.3 file without the rollup gets it built at open; its fill equals the one from its rows', async (t) => {
  const file = path.join(tmpDir(t), 'history.db');
  const t0 = Math.floor(now() / 3600) * 3600 - 7200;
  const inserts: string[] = [];
  for (let i = 0; i < 1500; i++) {
    const v = values[(i * 7) % values.length];
    const s = statuses[i % statuses.length];
    inserts.push(`('', ${t0 + i * 4.3 + (i % 3) / 10}, '${OID}', ${s ?? 'NULL'}, ${v === null ? 'NULL' : `'${v}'`})`);
  }
  await run('sqlite3', [file, `${EVA33_SCHEMA}\nINSERT INTO state_history VALUES ${inserts.join(',\n')};`]);
  t.deepEqual(await sqlite3Lines(file, "SELECT count(*) FROM sqlite_master WHERE name = 'state_history_minute'"), ['0']);
  const h = history(t, { file });
  await h.start();
  // written to the file at once, so it is built only once
  t.true(Number((await sqlite3Lines(file, 'SELECT count(*) FROM state_history_minute'))[0]) > 50);
  await sameAsRows(t, h, t0 + 61.5, t0 + 6000);
  await h.write([['', t0 + 6001, OID, 1, '40']]);
  await sameAsRows(t, h, t0 - 100, t0 + 7000);
  await h.flush();
  // the rollup is in the file, beside 3.3's table left as it was
  t.true(Number((await sqlite3Lines(file, 'SELECT count(*) FROM state_history_minute'))[0]) > 50);
  t.deepEqual(await sqlite3Lines(file, "SELECT count(*) FROM sqlite_master WHERE sql LIKE '%NUMERIC(20, 8)%'"), ['1']);
});

test('the rollup follows replaced rows, the row bound and keep', async (t) => {
  const dir = tmpDir(t);
  const file = path.join(dir, 'history.db');
  const t0 = Math.floor(now() / 60) * 60 - 5000;
  const h = history(t, { file, maxRows: 900, keep: 3000 });
  await h.start();
  const rows: HistoryRow[] = [];
  for (let i = 0; i < 1200; i++) rows.push(['', t0 + i * 4 + (i % 4) / 10, OID, statuses[i % statuses.length], values[(i * 5) % values.length]]);
  for (let i = 0; i < rows.length; i += 100) await h.write(rows.slice(i, i + 100)); // the bound drops the oldest 300
  // a minute's last row replaced, and a row in its middle; then one instant twice in one batch (the later state is the one kept)
  await h.write([['', rows[1109][1], OID, 0, '77'], ['', rows[1050][1], OID, null, 'word']]);
  await h.write([['', rows[1100][1], OID, 0, '5'], ['', rows[1101][1], OID, 1, '6'], ['', rows[1100][1], OID, 1, '7.5']]);
  t.deepEqual((await h.query({ space: '', oids: [OID], start: rows[1100][1], end: rows[1100][1] })).map((r) => r[4]), ['7.5']);
  await sameAsRows(t, h, t0, t0 + 6000);
  await h.clean(); // keep: rows before now - 3000 go, cutting through a minute
  const left = await h.query({ space: '', oids: [OID] });
  t.true(left.length > 0 && left.length < 900 && left[0][1] >= now() - 3001);
  await sameAsRows(t, h, t0, t0 + 6000);
  await h.stop();
  // opened again: the rollup is read from the file, not built again, and still agrees
  t.true(fs.existsSync(file));
  const again = history(t, { file, maxRows: 900, keep: 3000 });
  await again.start();
  await sameAsRows(t, again, t0, t0 + 6000);
});
