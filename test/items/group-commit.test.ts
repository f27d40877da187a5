import 'reflect-metadata';
import test from 'ava';
import path from 'node:path';
import { Dispatcher } from '../../core/dispatch';
import { makeDir, Keys } from '../helpers/controller';
import { journalRecords, readItemsState } from '../helpers/items-file';
import { startItemsController, ITEM_KEYS_INI } from '../helpers/items';

/**
 * Group commit of item updates under db_update instant: what arrives
 * together (the calls of a JSON RPC batch, concurrent calls) shares one
 * journal append and one fsync, each caller still answered once its change
 * is on disk; a write carries at most items_write_max states and
 * items_write_max_bytes bytes, the rest waiting for the write after.
 */
const k = Keys.master;
const meta = { ip: '127.0.0.1', transport: 'test', headers: {} };
const itemsFile = (dir: string) => path.join(dir, 'runtime', 'uc_items.json');
const onDisk = (dir: string) => readItemsState(itemsFile(dir)).items;

/** runtime/uc_items.json with sensors sensor:g/s0 … s<n-1>. */
function preloaded(n: number): Record<string, string> {
  const items: Record<string, object> = {};
  for (let i = 0; i < n; i++) items[`sensor:g/s${i}`] = { status: 1, value: '0', t: 1 };
  return { 'runtime/uc_items.json': JSON.stringify({ version: 1, items }) };
}

/** The items journal's figures from GET /metrics. */
async function writes(url: string) {
  const text = await (await fetch(`${url}/metrics`, { headers: { 'X-Auth-Key': k } })).text();
  const figure = (name: string) => Number(new RegExp(`^eva_${name} (\\d+)$`, 'm').exec(text)?.[1]);
  return { appends: figure('items_journal_appends_total'), states: figure('items_journal_states_total'), folds: figure('items_file_writes_total') };
}

const records = (dir: string) => journalRecords(itemsFile(dir));

const batch = (calls: [string, Record<string, unknown>][]) => calls.map(([method, params], id) => ({ jsonrpc: '2.0', method, params: { k, ...params }, id }));

async function post(url: string, body: unknown): Promise<any[]> {
  const r = await fetch(`${url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return (await r.json()) as any[];
}

test('instant: a JSON RPC batch of 1,000 updates of 1,000 items is one journal append, answered once all are on disk, each with its state event', async (t) => {
  const dir = makeDir(t, { keysIni: ITEM_KEYS_INI, files: preloaded(1000) });
  const c = await startItemsController(t, { dir });
  const before = await writes(c.url);
  const out = await post(c.url, batch(Array.from({ length: 1000 }, (_, i) => ['update', { i: `sensor:g/s${i}`, v: `b${i}` }])));
  const disk = onDisk(dir); // read at once: the answer came after the fsync
  t.deepEqual(out.map((x) => x.result), Array(1000).fill({ ok: true }));
  t.deepEqual(out.map((x) => x.id), [...Array(1000).keys()], 'answers in order');
  for (let i = 0; i < 1000; i++) if (disk[`sensor:g/s${i}`]?.value !== `b${i}`) t.fail(`sensor:g/s${i} on disk: ${JSON.stringify(disk[`sensor:g/s${i}`])}`);
  const after = await writes(c.url);
  t.is(after.appends - before.appends, 1, 'one append, one fsync, for the whole batch');
  t.is(after.states - before.states, 1000);
  t.is(c.states().filter((s) => s.oid.startsWith('sensor:g/s')).length, 1000, 'a state event per update');
  t.deepEqual(records(dir).map((r) => r.states), [1000]);
});

test('instant: 1,000 updates of one item in a batch are one write (its last state); an unchanged update in it waits for the same write', async (t) => {
  const dir = makeDir(t, { keysIni: ITEM_KEYS_INI, files: preloaded(1) });
  const c = await startItemsController(t, { dir });
  const before = await writes(c.url);
  const calls: [string, Record<string, unknown>][] = Array.from({ length: 999 }, (_, i) => ['update', { i: 'sensor:g/s0', v: String(i + 1) }]);
  calls.push(['update', { i: 'sensor:g/s0', v: '999' }]); // the state it already has
  const out = await post(c.url, batch(calls));
  t.is(onDisk(dir)['sensor:g/s0'].value, '999');
  t.true(out.every((x) => x.result?.ok === true));
  const after = await writes(c.url);
  t.is(after.appends - before.appends, 1);
  t.is(after.states - before.states, 1, 'the item\'s last state, once');
});

test('instant: concurrent calls share a write; calls arriving while it is under way share the next one', async (t) => {
  const dir = makeDir(t, { keysIni: ITEM_KEYS_INI, files: preloaded(10) });
  const c = await startItemsController(t, { dir });
  const d = c.ctl.get(Dispatcher);
  const update = (i: number, v: string) => {
    const answered = d.call('update', { k, i: `sensor:g/s${i}`, v }, meta) as Promise<unknown>;
    // what a caller may rely on: its change is on disk when the answer comes
    return answered.then((r) => ({ r, disk: onDisk(dir)[`sensor:g/s${i}`]?.value }));
  };
  const before = await writes(c.url);
  const first = [update(0, 'a'), update(1, 'a'), update(2, 'a')];
  // a few microtask turns: the write has taken its items and is under way (its fsync needs the event loop)
  for (let n = 0; n < 10; n++) await Promise.resolve();
  const second = [update(3, 'b'), update(4, 'b'), update(0, 'b')];
  const answers = await Promise.all([...first, ...second]);
  t.deepEqual(answers.map((a) => a.r), Array(6).fill(true));
  // sensor:g/s0 may read 'b' already: the next write is in the file (not yet fsync'd) when the first is answered
  t.true(['a', 'b'].includes(answers[0].disk), answers[0].disk);
  t.deepEqual(answers.slice(1).map((a) => a.disk), ['a', 'a', 'b', 'b', 'b'], 'each on disk when answered');
  const after = await writes(c.url);
  t.is(after.appends - before.appends, 2, 'two writes for six calls');
  t.is(after.states - before.states, 6);
  t.deepEqual(records(dir).map((r) => r.states), [3, 3]);
});

test('instant: a write carries at most items_write_max states; the rest wait for the writes after, nothing lost', async (t) => {
  const dir = makeDir(t, { keysIni: ITEM_KEYS_INI, files: preloaded(25), ini: { server: { items_write_max: 10 } } });
  const c = await startItemsController(t, { dir });
  const before = await writes(c.url);
  const out = await post(c.url, batch(Array.from({ length: 25 }, (_, i) => ['update', { i: `sensor:g/s${i}`, v: 'x' }])));
  t.true(out.every((x) => x.result?.ok === true));
  const disk = onDisk(dir);
  t.true(Array.from({ length: 25 }, (_, i) => disk[`sensor:g/s${i}`].value).every((v) => v === 'x'), 'the batch answered once all were on disk');
  t.is((await writes(c.url)).appends - before.appends, 3);
  t.deepEqual(records(dir).map((r) => r.states), [10, 10, 5]);

  // concurrent callers past the bound: each answered once its own write is done
  const d = c.ctl.get(Dispatcher);
  const answers = await Promise.all(Array.from({ length: 25 }, (_, i) => (d.call('update', { k, i: `sensor:g/s${i}`, v: 'y' }, meta) as Promise<unknown>)
    .then(() => onDisk(dir)[`sensor:g/s${i}`].value)));
  t.deepEqual(answers, Array(25).fill('y'));
  t.deepEqual(records(dir).map((r) => r.states), [10, 10, 5, 10, 10, 5]);
});

test('instant: a write carries at most items_write_max_bytes of states; a larger state goes alone', async (t) => {
  const bound = 4096;
  const dir = makeDir(t, { keysIni: ITEM_KEYS_INI, files: preloaded(10), ini: { server: { items_write_max_bytes: bound } } });
  const c = await startItemsController(t, { dir });
  const v = 'v'.repeat(1000);
  const out = await post(c.url, batch(Array.from({ length: 10 }, (_, i) => ['update', { i: `sensor:g/s${i}`, v: `${i}${v}` }])));
  t.true(out.every((x) => x.result?.ok === true));
  const disk = onDisk(dir);
  t.true(Array.from({ length: 10 }, (_, i) => disk[`sensor:g/s${i}`].value).every((x, i) => x === `${i}${v}`));
  const recs = records(dir);
  t.true(recs.every((r) => r.bytes <= bound), JSON.stringify(recs));
  t.is(recs.reduce((n, r) => n + r.states, 0), 10);
  t.is(recs.length, 4, `three states of about 1.1 KB fit in 4 KiB, four do not: ${JSON.stringify(recs)}`);

  const big = 'B'.repeat(2 * bound);
  t.true((await post(c.url, batch([['update', { i: 'sensor:g/s0', v: big }], ['update', { i: 'sensor:g/s1', v: 'small' }]]))).every((x) => x.result?.ok === true));
  const last = records(dir).slice(-2);
  t.like(last[0], { states: 1 });
  t.true(last[0].bytes > bound, 'the state larger than the bound, alone');
  t.like(last[1], { states: 1 });
  t.is(onDisk(dir)['sensor:g/s0'].value, big);
});
