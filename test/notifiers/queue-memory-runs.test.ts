import fs from 'node:fs';
import test from 'ava';
import { Keys, MAIN, makeDir, spawnListening } from '../helpers/controller';
import { Receiver } from '../helpers/receiver';
import { notifierFiles, stats } from '../helpers/notifiers';

/*
 * The peak, not the average: 1,500 updates of 400 KB to a controller whose
 * json web hook (durable, the default: every event goes through its outbox)
 * is dead, in several runs, each a fresh controller process. The peak is
 * the kernel's own high-water mark of the process (VmHWM of
 * /proc/<pid>/status, reset through clear_refs once the controller is warm),
 * so no sample can miss it. Every run must stay under
 * the bound: one run over it fails, however low the others.
 */

const RUNS = Number(process.env.QUEUE_MEMORY_RUNS ?? 3);
const UPDATES = Number(process.env.QUEUE_MEMORY_UPDATES ?? 1500);
const VALUE = 400_000;
/**
 * MiB. Node 20: before the journal let go of a write's JSON text, runs peaked at +396 to +433; after, +296 to
 * +360. Node 26 after: +319 to +346 (Node 24: +241 to +283). A guard against the kind of growth an unbounded
 * copy makes (+600 and rising without the queue's byte bound), with room for the garbage collectors of three
 * Nodes on a loaded machine; what proves the journal's fix exactly is outbox-memory.test.ts.
 */
const LIMIT_MIB = 480;
const MiB = 1024 * 1024;

function procStatus(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
}

/** One run: a fresh controller (node started with `flags`), 20 warm-up updates, then UPDATES from 4 clients; the peak over the RSS before them. */
async function run(t: import('ava').ExecutionContext, uri: string, flags: string[] = []): Promise<{ before: number; peak: number; queued: number; held: number; journal: number }> {
  const dir = makeDir(t, {
    ini: { server: { db_update: 'manual' } },
    files: notifierFiles({ hook: { type: 'json', uri, skip_test: true, timeout: 5, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] } }),
  });
  const c = await spawnListening(t, [process.execPath, ...flags, MAIN, '--dir', dir]);
  const pid = c.proc.pid!;
  const k = Keys.master;
  await c.client.ok('create', { k, i: 'sensor:big/s' });
  const update = async (i: number) => {
    const body = JSON.stringify({ jsonrpc: '2.0', method: 'update', params: { k, i: 'sensor:big/s', v: String(i).padEnd(VALUE, 'x') }, id: i });
    const r = await fetch(`${c.url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
    const a = (await r.json()) as { error?: { message: string } };
    if (a.error) throw new Error(`update ${i}: ${a.error.message}`);
  };
  for (let i = 0; i < 20; i++) await update(-1 - i);
  // the high-water mark so far is the start's: the growth is measured from what the process holds now
  const before = procStatus(pid, 'VmRSS');
  fs.writeFileSync(`/proc/${pid}/clear_refs`, '5'); // resets VmHWM to the current RSS
  let next = 0;
  const worker = async () => { while (next < UPDATES) await update(next++); };
  await Promise.all([worker(), worker(), worker(), worker()]);
  const peak = procStatus(pid, 'VmHWM');
  const s = await stats(c.client, k, 'hook');
  c.proc.kill('SIGKILL');
  await c.exited;
  return { before, peak, queued: s.queued, held: s.outbox?.held ?? 0, journal: s.outbox?.bytes ?? 0 };
}

test.serial(`${UPDATES} updates of 400 KB to a dead durable web hook: the peak RSS of each of ${RUNS} runs stays within +${LIMIT_MIB} MiB`, async (t) => {
  t.timeout(RUNS * 300_000);
  const dead = await Receiver.start(t);
  const uri = dead.uri;
  await dead.close();
  const peaks: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const x = await run(t, uri);
    peaks.push(x.peak - x.before);
    t.log(`run ${r + 1}: RSS before ${(x.before / MiB).toFixed(0)} MiB, peak ${(x.peak / MiB).toFixed(0)} MiB (+${((x.peak - x.before) / MiB).toFixed(0)}); queued ${x.queued}, outbox held ${x.held}, journal ${(x.journal / MiB).toFixed(1)} MiB`);
  }
  for (const [i, p] of peaks.entries()) t.true(p < LIMIT_MIB * MiB, `run ${i + 1}: RSS grew by ${(p / MiB).toFixed(0)} MiB`);
});

/*
 * What the updates hold at once is bounded in bytes; the rest of the peak
 * above is garbage the collector has not yet taken back. Proof: the same
 * run with the heap capped at HEAP_CAP MiB (node --max-old-space-size, the
 * operator's knob for a hard cap, etc/README.md) completes — a live set
 * that grew with the volume (600 MB of values here) would end in an
 * out-of-memory crash — and its peak is lower.
 */
const HEAP_CAP = 128;
test.serial(`the same run with the heap capped at ${HEAP_CAP} MiB completes: what the updates hold at once is bounded, the rest is garbage`, async (t) => {
  t.timeout(300_000);
  const dead = await Receiver.start(t);
  const uri = dead.uri;
  await dead.close();
  const x = await run(t, uri, [`--max-old-space-size=${HEAP_CAP}`]);
  t.log(`capped: RSS before ${(x.before / MiB).toFixed(0)} MiB, peak ${(x.peak / MiB).toFixed(0)} MiB (+${((x.peak - x.before) / MiB).toFixed(0)}); queued ${x.queued}, outbox held ${x.held}`);
  t.true(x.queued > 0 && x.held > 0, 'the hook was dead: events wait in its queue and outbox');
  t.true(x.peak - x.before < LIMIT_MIB * MiB);
});
