import test from 'ava';
import path from 'node:path';
import { spawnController, makeDir, Keys } from '../helpers/controller';
import { until } from '../helpers/wait';
import { journalRecords, readItemsState } from '../helpers/items-file';

const k = Keys.master;
const ROUNDS = 5;
/** clients sending batches at once, each to sensors of its own */
const CLIENTS = 3;
const SENSORS = 20;
/** updates per sensor in one batch (the last carries the batch number) */
const PER_SENSOR = 10;

/** One client: the last batch number the controller acknowledged, and the one in flight when it died. */
interface Stream { group: string; acked: number; sent: number }

/** Each batch n sets every sensor of the group PER_SENSOR times, the last time to n; an error answer is a failure, a broken connection the end. */
async function run(url: string, s: Stream): Promise<void> {
  for (let n = s.acked + 1; ; n++) {
    s.sent = n;
    const body = [];
    for (let r = PER_SENSOR - 1; r >= 0; r--) {
      for (let i = 0; i < SENSORS; i++) {
        body.push({ jsonrpc: '2.0', method: 'update', params: { k, i: `sensor:g/${s.group}_${i}`, v: r ? `${n}.${r}` : String(n) }, id: body.length });
      }
    }
    let out: { error?: { message: string } }[];
    try {
      const res = await fetch(`${url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
      out = await res.json() as typeof out;
    } catch {
      return; // the controller was killed
    }
    const failed = out.find((x) => x.error);
    if (failed) throw new Error(`${s.group} batch ${n}: ${failed.error!.message}`);
    s.acked = n;
  }
}

test('SIGKILL during concurrent JSON RPC batches of updates (db_update instant, grouped writes): every acknowledged batch is on disk', async (t) => {
  t.timeout(300_000);
  const dir = makeDir(t, { ini: { server: { db_update: 'instant' } } });
  const itemsFile = path.join(dir, 'runtime', 'uc_items.json');
  const streams: Stream[] = Array.from({ length: CLIENTS }, (_, c) => ({ group: `g${c}`, acked: 0, sent: 0 }));
  let batches = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const child = await spawnController(t, dir, [], 60_000);
    if (round === 0) {
      for (const s of streams) for (let i = 0; i < SENSORS; i++) await child.client.ok('create', { k, i: `sensor:g/${s.group}_${i}` });
    }
    const before = streams.reduce((n, s) => n + s.acked, 0);
    const runs = streams.map((s) => run(child.url, s));
    const started = streams.map((s) => s.acked);
    await until('every client acknowledged a batch', () => streams.every((s, c) => s.acked > started[c] + 1), 60_000);
    await new Promise((r) => setTimeout(r, Math.random() * 300));
    child.proc.kill('SIGKILL');
    await child.exited;
    await Promise.all(runs);
    batches += streams.reduce((n, s) => n + s.acked, 0) - before;

    const { items } = readItemsState(itemsFile); // the file and its journal, as a restart reads them
    for (const s of streams) {
      for (let i = 0; i < SENSORS; i++) {
        const oid = `sensor:g/${s.group}_${i}`;
        const v = items[oid]?.value;
        // the acknowledged batch, or a later state of the one in flight (never older)
        const ok = v === String(s.acked) || (s.sent > s.acked && (v === String(s.sent) || v?.startsWith(`${s.sent}.`)));
        if (!ok) t.fail(`round ${round}: ${oid} on disk ${v}, acknowledged ${s.acked}, in flight ${s.sent}`);
      }
      s.acked = Math.max(s.acked, ...Array.from({ length: SENSORS }, (_, i) => Math.floor(Number(items[`sensor:g/${s.group}_${i}`]?.value))));
    }
  }
  t.log(`${batches} acknowledged batches of ${SENSORS * PER_SENSOR} updates over ${ROUNDS} kills`);
  t.true(batches >= ROUNDS * CLIENTS * 2);
});

test('SIGKILL right after a JSON RPC batch of updates is answered (db_update as by default): the batch was one journal append, and nothing of it is lost', async (t) => {
  const N = 500;
  const items: Record<string, object> = {};
  for (let i = 0; i < N; i++) items[`sensor:g/s${i}`] = { status: 1, value: '0', t: 1 };
  const dir = makeDir(t, { files: { 'runtime/uc_items.json': JSON.stringify({ version: 1, items }) } });
  const itemsFile = path.join(dir, 'runtime', 'uc_items.json');
  const child = await spawnController(t, dir, [], 60_000);
  const body = Array.from({ length: N }, (_, i) => ({ jsonrpc: '2.0', method: 'update', params: { k, i: `sensor:g/s${i}`, v: `v${i}` }, id: i }));
  const res = await fetch(`${child.url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const out = await res.json() as { result?: { ok: boolean } }[];
  child.proc.kill('SIGKILL');
  await child.exited;
  t.true(out.length === N && out.every((x) => x.result?.ok === true));
  const disk = readItemsState(itemsFile).items;
  const lost = Array.from({ length: N }, (_, i) => i).filter((i) => disk[`sensor:g/s${i}`]?.value !== `v${i}`);
  t.deepEqual(lost, [], 'every update of the answered batch on disk');
  t.deepEqual(journalRecords(itemsFile).map((r) => r.states), [N], 'one journal record (one append, one fsync) for the whole batch');
});
