import fs from 'node:fs';
import path from 'node:path';
import { spawnController, makeDir, Keys, type Child, type Client } from '../helpers/controller';
import { sleep, until } from '../helpers/wait';
import { needs } from '../helpers/tools';
import { sqlite3Lines } from '../helpers/history-db';
import { Journal } from '../../core/toolkit/journal';
import type { HistoryRow } from '../../plugins/notifiers/db/schema';

const k = Keys.master;
// updates go round these, so two of them rarely share an instant (a later state of an item in the same instant replaces the earlier)
const SENSORS = ['sensor:new/s0', 'sensor:new/s1', 'sensor:new/s2', 'sensor:new/s3'];

interface Stats { queued: number; sent: number; dropped: number; replaying: number; replayed: number; taken_replaying: number; lost_unstored: number }
async function stats(client: Client): Promise<Stats> {
  return (await client.ok('get_notifier', { k, i: 'hist' })).stats;
}

function histDir(t: Parameters<typeof makeDir>[0], extra: Record<string, unknown> = {}): { dir: string; file: string } {
  const notifier = {
    id: 'hist', type: 'db', enabled: true, db: 'runtime/db/history.db', keep: 86400 * 7, flush_interval: 0.5,
    events: [{ subject: 'state', types: ['#'], groups: ['#'] }], ...extra,
  };
  const dir = makeDir(t, { files: { 'runtime/uc_notify.d/hist.json': JSON.stringify(notifier) } });
  return { dir, file: path.join(dir, 'runtime', 'db', 'history.db') };
}

/**
 * Updates of SENSORS one at a time, each with a new value, until stopped; the
 * host delivers in order, so when its `sent` has grown by n the first n
 * values are stored (as test/durability/history.test.ts reasons).
 */
function stream(c: Client, tag: string): { values: string[]; stop: () => Promise<void> } {
  const values: string[] = [];
  let alive = true;
  const writer = (async () => {
    for (let n = 0; alive; n++) {
      const i = SENSORS[n % SENSORS.length];
      const v = `${tag}n${n}`;
      values.push(`${i}=${v}`);
      try {
        const r = await c.rpc('update', { k, i, s: 1, v });
        if (r.error) throw new Error(r.error.message);
      } catch { return; }
    }
  })();
  return { values, stop: async () => { alive = false; await writer; } };
}

async function kill(child: Child): Promise<void> {
  child.proc.kill('SIGKILL');
  await child.exited;
}

// a journal of SEGMENTS segments of ROWS_PER rows each (~1.1 MB each): past the 8 MiB bound, so a start replays it for some seconds
const SEGMENTS = 10;
const ROWS_PER = 25_000;
const KILLS = 3;

needs('sqlite3')('a journal replaying at start takes new events meanwhile (journaled, in the history after it); kills during the replay lose none of them and still end in a working history', async (t) => {
  const { dir, file } = histDir(t);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // as a controller killed with a large journal leaves it: segments, no file yet
  const t0 = Date.now() / 1000 - 3600;
  const j = new Journal(file);
  j.open(0);
  for (let s = 0; s < SEGMENTS; s++) {
    if (s) j.rotate();
    for (let b = 0; b < ROWS_PER / 1000; b++) {
      const rows: HistoryRow[] = Array.from({ length: 1000 }, (_, i) => {
        const n = s * ROWS_PER + b * 1000 + i;
        return ['', t0 + n / 1000, `sensor:old/s${n % 50}`, 1, String(n)];
      });
      j.append(rows);
    }
  }
  j.close();
  const acked: string[] = [];
  for (let round = 0; round <= KILLS; round++) {
    const child = await spawnController(t, dir);
    const c = child.client;
    // the item's creation (the first round; later it exists) is a state event too: counted before the stream starts
    let created = 0;
    for (const i of SENSORS) if (!(await c.rpc('create', { k, i })).error) created++;
    const base = created
      ? await until('the creations stored', async () => { const st = await stats(c); return st.queued === 0 && st.sent >= created && st.sent; }, 60_000)
      : (await stats(c)).sent;
    const s = stream(c, `r${round}`);
    // rows acknowledged (journaled) while the journal is still replaying
    let during: Stats | undefined;
    await until('a row stored while the journal replays, or the replay over', async () => {
      const st = await stats(c);
      if (st.replaying > 0 && st.sent - base >= 3) during = st;
      return during !== undefined || st.replaying === 0;
    }, 60_000);
    t.truthy(during, `round ${round}: the replay ended before a row was stored during it`);
    if (round < KILLS) {
      await kill(child);
      await s.stop();
      acked.push(...s.values.slice(0, during!.sent - base));
      continue;
    }
    // the last round: the replay ends, then everything acknowledged is there, the old rows too
    await until('the replay over', async () => (await stats(c)).replaying === 0, 60_000);
    const seen = (await stats(c)).sent;
    await until('rows stored after the replay', async () => (await stats(c)).sent > seen + 3, 30_000);
    await s.stop();
    const last = await stats(c);
    t.is(last.dropped, 0);
    t.true(last.taken_replaying > 0, JSON.stringify(last));
    acked.push(...s.values.slice(0, last.sent - base));
    await c.ok('save', { k });
    const have = new Set(await sqlite3Lines(file, "SELECT oid || '=' || value FROM state_history WHERE oid LIKE 'sensor:new/%'"));
    const lost = acked.filter((v) => !have.has(v));
    t.deepEqual(lost, [], `${lost.length} of ${acked.length} acknowledged rows lost`);
    t.deepEqual(await sqlite3Lines(file, "SELECT count(*) FROM state_history WHERE oid LIKE 'sensor:old/%'"), [String(SEGMENTS * ROWS_PER)]);
    child.proc.kill('SIGTERM');
    await child.exited;
  }
  t.log(`${acked.length} rows acknowledged during replays, over ${KILLS} kills`);
});

needs('sqlite3')('a kill loses the events still queued for the history: the next start counts them (get_notifier lost_unstored) and says so in the log; a stop leaves no count', async (t) => {
  // one event a send, each after the commit interval: the queue grows while updates come faster than 4 a second
  const { dir, file } = histDir(t, { max_batch: 1 });
  const note = `${file}.unstored`;
  let child = await spawnController(t, dir);
  let c = child.client;
  for (const i of SENSORS) await c.ok('create', { k, i });
  const s = stream(c, 'q');
  // the note says what the queue held at most a commit interval ago
  const noted = await until('the queue noted', () => {
    try { const n = Number(fs.readFileSync(note, 'utf8')); return n >= 50 && n; } catch { return false; }
  }, 30_000);
  await kill(child);
  await s.stop();
  child = await spawnController(t, dir);
  c = child.client;
  const st = await until('the history started', async () => { const x = await stats(c); return x.lost_unstored !== undefined && x; }, 30_000);
  t.true(st.lost_unstored >= noted, `counted ${st.lost_unstored}, noted ${noted} before the kill`);
  const log = () => fs.readFileSync(path.join(dir, 'controller.log'), 'utf8');
  await until('the warning', () => log().includes(`about ${st.lost_unstored} event(s) waited in its queue, not yet in the history: lost`), 10_000);
  // no more than were never stored: the updates sent, and the creates' own events, which wait in the same queue
  // (on a loaded machine none of them may be stored yet); one batch besides: the one in hand may have been journaled
  await c.ok('save', { k });
  const stored = Number((await sqlite3Lines(file, "SELECT count(*) FROM state_history WHERE value LIKE 'qn%'"))[0]);
  t.true(st.lost_unstored <= s.values.length + SENSORS.length - stored + 1, `counted ${st.lost_unstored}, ${s.values.length} sent after ${SENSORS.length} creates, ${stored} stored`);
  // a stop: nothing left uncounted
  child.proc.kill('SIGTERM');
  await child.exited;
  t.false(fs.existsSync(note));
  child = await spawnController(t, dir);
  t.is((await until('the history started', async () => { const x = await stats(child.client); return x.lost_unstored !== undefined && x; }, 30_000)).lost_unstored, 0);
  child.proc.kill('SIGTERM');
  await child.exited;
});
