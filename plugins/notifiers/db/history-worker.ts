import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { HistoryFile } from './store';
import type { HistoryOptions, ToWorker, FromWorker } from './history';
import type { HistoryRow } from './schema';
import type { Bucket } from '../../history/contract';

/**
 * The history thread of one db notifier. sql.js keeps the database in memory
 * and can only be saved whole: exporting 1M rows (~140 MB) takes a fraction
 * of a second and writing it longer, so everything happens here and the
 * controller's thread never waits for it. Rows are journaled and inserted
 * (store.ts); a timer asks the checkpoint policy (policy.ts) whether to
 * rewrite the file, and another cleans expired rows.
 */
const nowSeconds = () => Date.now() / 1000;

class HistoryThread {
  private timer: NodeJS.Timeout | undefined;
  private cleaner: NodeJS.Timeout | undefined;

  constructor(readonly store: HistoryFile) {
    const opts = store.opts;
    this.schedule();
    this.cleaner = setInterval(() => store.clean(nowSeconds()), opts.cleanInterval * 1000);
  }

  /** Look again after the flush interval; a checkpoint that took long pushes the next look further away (bounded disk load). */
  private schedule(): void {
    const { flushInterval, flushPauseFactor } = this.store.opts;
    const pause = Math.max(flushInterval * 1000, this.store.stats.last_flush_ms * flushPauseFactor);
    this.timer = setTimeout(() => {
      const now = nowSeconds();
      // whatever happens in this look, the next one is scheduled: the file must not stop following
      const run = Promise.resolve().then(() => (this.store.checkpointDue(now) ? this.store.checkpoint(now) : undefined));
      void run.catch(() => undefined).finally(() => { if (this.timer) this.schedule(); });
    }, Math.max(pause, 50));
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    clearInterval(this.cleaner);
    this.timer = undefined;
    await this.store.checkpointAll(nowSeconds());
    this.store.close();
  }
}

/**
 * Serve the main thread: one message at a time, in order, each answered by
 * its id. While the journal replays at start, rows are taken at once
 * (journaled, answered; the replay inserts them after the older segments)
 * and everything else waits for the replay: a query never finds less than
 * was acknowledged.
 */
function serve(): void {
  const port = parentPort!;
  const opts = (workerData as { options: HistoryOptions }).options;
  const send = (m: FromWorker) => port.postMessage(m);
  const warn = (message: string) => send({ kind: 'warning', message });
  let store: HistoryFile | undefined;
  const fail = (err: unknown) => {
    send({ kind: 'failed', message: (err as Error).message });
    // nothing else runs here: closing the port ends the thread, never terminated from outside
    try { store?.close(); } catch { /* closing what failed */ }
    port.close();
    return undefined;
  };
  // accepting once the file is open and the journal's new segment too; ready once the journal is replayed
  let chain: Promise<HistoryThread | undefined> = HistoryFile.begin(opts, warn, nowSeconds()).then(async (s) => {
    store = s;
    send({ kind: 'accepting', stats: s.snapshot });
    try {
      await s.replay(nowSeconds);
    } catch (err) {
      return fail(err);
    }
    if (!s.replaying) send({ kind: 'ready', stats: s.snapshot });
    return s.replaying ? undefined : new HistoryThread(s); // abandoned by a stop: that stop closes it
  }, fail);
  const answer = async (m: ToWorker, s: HistoryFile, run: () => Promise<HistoryRow[] | Bucket[] | undefined>) => {
    try {
      const rows = await run();
      send({ kind: 'done', id: m.id, stats: s.snapshot, rows });
    } catch (err) {
      send({ kind: 'error', id: m.id, message: (err as Error).message });
    }
  };
  port.on('message', (m: ToWorker) => {
    if (store?.replaying) {
      const s = store;
      if (m.kind === 'insert') { void answer(m, s, async () => { s.write(m.rows); return undefined; }); return; }
      if (m.kind === 'stop') s.abandon(); // everything not yet replayed stays in the journal for the next start
    }
    chain = chain.then(async (h) => {
      if (!h) {
        // the replay was abandoned: only the stop is answered, and the thread ends
        const s = store;
        if (m.kind === 'stop' && s) await answer(m, s, async () => { s.close(); return undefined; });
        if (m.kind === 'stop') port.close();
        return h;
      }
      await answer(m, h.store, async () => {
        if (m.kind === 'insert') h.store.write(m.rows);
        else if (m.kind === 'query') return h.store.query(m.query);
        else if (m.kind === 'resample') return h.store.resample(m.space, m.oid, m.start, m.end, m.step);
        else if (m.kind === 'flush') await h.store.checkpointAll(nowSeconds());
        else if (m.kind === 'clean') h.store.clean(nowSeconds());
        else if (m.kind === 'stop') await h.stop();
        return undefined;
      });
      if (m.kind === 'stop') port.close();
      return h;
    });
  });
}

// The plugin host and the command line require every module under plugins/: only a worker started for this runs it.
if (!isMainThread && (workerData as { historyWorker?: unknown } | null)?.historyWorker === true) serve();
