import test from 'ava';
import pg from 'pg';
import { startController, Keys } from '../helpers/controller';
import { notifierFiles } from '../helpers/notifiers';
import { postgresUnavailable, sharedPostgres } from '../helpers/postgres';
import { EVA33_SCHEMA } from '../helpers/eva33-history';

/**
 * A PostgreSQL history as EVA ICS 3.3 left it (its state_history table and
 * indexes, rows written by 3.3, none of this project's per-minute rollup),
 * continued by a db notifier: the history API answers from the first call
 * after start, while the notifier is still adding the rollup of the old rows,
 * and the fill is right over every old row.
 */

const server = sharedPostgres();
test.after.always(() => server.stop());

const N = 200_000;
const OID = 'sensor:env/t';

test('state_history and state_log over a 3.3 PostgreSQL history, at once after start', async (t) => {
  const why = postgresUnavailable();
  if (why) { t.log(`skipped: ${why}`); t.pass(); return; }
  t.timeout(180_000);
  const uri = await server.database();
  const end = Math.floor(Date.now() / 1000 / 300) * 300;
  const c = new pg.Client({ connectionString: uri });
  await c.connect();
  t.teardown(() => c.end());
  await c.query(EVA33_SCHEMA);
  // a day of rows, evenly spread, values 0..99
  await c.query(`INSERT INTO state_history (space, t, oid, status, value)
                 SELECT '', $1::numeric - 86400 + g * 86400.0 / $2, $3, 1, (g % 100)::text FROM generate_series(1, $2) g`, [end, N, OID]);
  const r = await startController(t, {
    files: notifierFiles({ db_1: { type: 'db', db: uri, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] } }),
  });
  const fill = await r.client.ok('state_history', { k: Keys.master, i: OID, s: end - 86400, e: end, w: '5T', x: 'value' });
  const log = await r.client.ok('state_log', { k: Keys.master, i: OID, s: end - 300, e: end });
  // what the intervals must hold, computed by the server from the rows alone
  const expected = (await c.query(`SELECT floor(t / 300) * 300 AS b, avg(value::float8) AS v FROM state_history
                                   WHERE t > $1 AND t <= $2 GROUP BY 1 ORDER BY 1`, [end - 86400, end])).rows;
  // the same intervals (3.3 labels them by their start), the same means: no old row missed or counted twice
  t.deepEqual(fill.t, expected.map((e: any) => Number(e.b)));
  t.is(fill.t.length, 289); // a day of 5-minute intervals, and the one holding the row at `end`
  fill.value.forEach((v: number, i: number) => t.true(Math.abs(v - expected[i].v) < 1e-9, `interval ${i}: ${v} != ${expected[i].v}`));
  const [{ inLog }] = (await c.query('SELECT count(*)::int AS "inLog" FROM state_history WHERE t >= $1 AND t <= $2', [end - 300, end])).rows;
  t.true(inLog > 600);
  t.is(log.length, inLog);
  t.true(log.every((rec: any) => rec.oid === OID && rec.t >= end - 300 && rec.t <= end));
  // the rollup was made once for the rows 3.3 left
  const [{ n }] = (await c.query('SELECT sum(n_value)::int AS n FROM state_history_minute')).rows;
  t.is(n, N);
});
