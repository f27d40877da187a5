import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { spawnController, makeDir, Keys, type Client } from '../helpers/controller';
import { sleep, until } from '../helpers/wait';
import { needs } from '../helpers/tools';

const run = promisify(execFile);
const k = Keys.master;
const ROUNDS = 20;
const SENSORS = ['sensor:env/s0', 'sensor:env/s1', 'sensor:env/s2', 'sensor:env/s3'];

async function sqlite3(file: string, sql: string): Promise<string[]> {
  const { stdout } = await run('sqlite3', ['-readonly', file, sql], { timeout: 30_000 });
  return stdout.split('\n').filter((l) => l !== '');
}

async function stats(client: Client): Promise<{ queued: number; sent: number; dropped: number }> {
  return (await client.ok('get_notifier', { k, i: 'hist' })).stats;
}

/**
 * What the notifier host counts as sent is what the db endpoint acknowledged
 * (its write resolved). Updates go one at a time, each with a new value, and
 * the host delivers in order, so when `sent` has grown by n since the stream
 * began, the first n updates of the stream are stored (the last of them may be
 * the update whose answer the kill cut off). A poller reads `sent`
 * while the stream runs; the highest answer it got before the kill is what
 * was acknowledged for certain.
 */
needs('sqlite3')('SIGKILL during a stream of updates: every row acknowledged to the notifier host is in the history after restart', async (t) => {
  const notifier = {
    id: 'hist', type: 'db', enabled: true, db: 'runtime/db/history.db', keep: 86400, flush_interval: 0.5,
    events: [{ subject: 'state', types: ['#'], groups: ['#'] }],
  };
  const dir = makeDir(t, { files: { 'runtime/uc_notify.d/hist.json': JSON.stringify(notifier) } });
  const file = path.join(dir, 'runtime', 'db', 'history.db');
  const acked: string[] = [];
  for (let round = 0; round <= ROUNDS; round++) {
    const child = await spawnController(t, dir);
    const c = child.client;
    // what the previous rounds acknowledged: replayed from the journal, then written by `save`
    await c.ok('save', { k });
    const have = new Set(await sqlite3(file, "SELECT oid || '=' || value FROM state_history"));
    const lost = acked.filter((a) => !have.has(a));
    t.deepEqual(lost, [], `round ${round}: ${lost.length} of ${acked.length} acknowledged rows lost`);
    t.deepEqual(await sqlite3(file, 'SELECT count(*) - count(DISTINCT space || t || oid) FROM state_history'), ['0']);
    if (round === ROUNDS) { child.proc.kill('SIGTERM'); await child.exited; break; }

    for (const i of SENSORS) await c.rpc('create', { k, i }); // an error after the first round: it exists
    await c.ok('save', { k });
    const base = await until('the queue emptied', async () => { const s = await stats(c); return s.queued === 0 && s; });
    // every update sent, in order, the one in flight at the kill included: the controller may have applied it
    // (and its row may have been acknowledged to the host) while its answer was lost with the process
    const stream: string[] = [];
    let alive = true;
    const writer = (async () => {
      for (let n = 0; alive; n++) {
        const i = SENSORS[n % SENSORS.length];
        const v = `r${round}n${n}`;
        stream.push(`${i}=${v}`);
        try {
          const r = await c.rpc('update', { k, i, s: 1, v });
          if (r.error) throw new Error(r.error.message);
        } catch { return; }
      }
    })();
    let sent = 0;
    const poller = (async () => {
      while (alive) {
        try {
          const s = await stats(c);
          t.is(s.dropped, 0);
          sent = Math.max(sent, s.sent - base.sent);
        } catch { return; }
        await sleep(15);
      }
    })();
    // a random moment once rows are being acknowledged (on a busy machine the first ones take a while)
    await until('rows acknowledged in this round', () => sent >= 3, 30_000);
    await sleep(300 + Math.random() * 700);
    child.proc.kill('SIGKILL');
    await child.exited;
    alive = false;
    await Promise.all([writer, poller]);
    t.true(sent <= stream.length, `round ${round}: sent ${sent} of ${stream.length} updates sent`);
    acked.push(...stream.slice(0, sent));
  }
  t.log(`${acked.length} acknowledged rows over ${ROUNDS} kills`);
  t.true(acked.length >= ROUNDS * 3, `${acked.length} rows acknowledged`);
});
