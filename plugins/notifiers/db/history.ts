import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { ModuleLogger } from '../../../core/log';
import type { HistoryRow } from './schema';
import type { HistoryBackend, HistoryQuery } from './backend';
import type { Bucket, HistoryReader } from '../../history/contract';

/** What the history thread needs to know; all times in seconds. */
export interface HistoryOptions {
  file: string;
  space: string;
  keep: number;
  /** most rows the table holds; the oldest go first */
  maxRows: number;
  /** most bytes of database pages in use (the file size, near enough); the oldest rows go first */
  maxBytes: number;
  /** shortest time between two checkpoints (whole-file rewrites) */
  flushInterval: number;
  /** the pause after a checkpoint is at least its duration times this, so big files are not rewritten back to back */
  flushPauseFactor: number;
  /** write budget: checkpoints run when it covers them (policy.ts) */
  maxWriteBytesPerHour: number;
  /** a checkpoint runs anyway once the journal holds this share of the file's size... */
  journalShare: number;
  /** ...or this many bytes, whichever is more */
  journalFloor: number;
  /** ...but at most this many bytes, whatever the file's size: the replay at start takes a few seconds at most (absent: no such bound) */
  journalMax?: number;
  cleanInterval: number;
  /**
   * seconds between two journal commits (fsyncs): a batch waits for the rest
   * of this after the previous one, while the notifier host gathers the next
   * events into it, so the disk sees a few fsyncs a second however many rows
   */
  commitInterval: number;
  /** a batch of at least this many rows commits at once: the host has a backlog, and waiting would only grow it */
  commitRows: number;
  /** most batches on their way to the thread; more are refused (the notifier host retries them) */
  maxPending: number;
}

/** Live figures of the history (get_notifier). */
export interface HistoryStats {
  rows: number;
  /** batches inserted */
  batches: number;
  /** rows handed over */
  received: number;
  /** of them, new rows */
  inserted: number;
  /** of them, a later state of an item at an instant that already had a row (same space, t, oid) */
  replaced: number;
  /** rows deleted because the table was at its bound */
  trimmed: number;
  /** rows deleted because they were older than keep */
  expired: number;
  flushes: number;
  flush_errors: number;
  /** the whole last flush: export, then the atomic write */
  last_flush_ms: number;
  /** of it, the export (the history thread is busy for this long) */
  last_export_ms: number;
  last_flush: number;
  file_size: number;
  last_error: string;
  /** journal bytes not yet folded into the file */
  journal_bytes: number;
  /** journal bytes appended since start */
  journal_written: number;
  /** rows replayed from the journal at start */
  replayed: number;
  /** journal bytes still to replay at start (0 once the replay is over) */
  replaying: number;
  /** rows taken (journaled) while the journal replayed at start, inserted after it */
  taken_replaying: number;
  /** bytes written by checkpoints since start */
  checkpoint_written: number;
}

export type ToWorker =
  | { kind: 'insert'; id: number; rows: HistoryRow[] }
  | { kind: 'query'; id: number; query: HistoryQuery }
  | { kind: 'resample'; id: number; space: string; oid: string; start: number; end: number; step: number }
  | { kind: 'flush'; id: number }
  | { kind: 'clean'; id: number }
  | { kind: 'stop'; id: number };

export type FromWorker =
  | { kind: 'accepting'; stats: HistoryStats }
  | { kind: 'ready'; stats: HistoryStats }
  | { kind: 'failed'; message: string }
  | { kind: 'done'; id: number; stats: HistoryStats; rows?: HistoryRow[] | Bucket[] }
  | { kind: 'error'; id: number; message: string }
  | { kind: 'warning'; message: string };

const WORKER_FILE = path.join(__dirname, 'history-worker.js');
/** seconds a thread may take to end after its stop answer (its last checkpoint is already written) */
const STOP_GRACE = 10;

type Call = { kind: 'insert'; rows: HistoryRow[] } | { kind: 'query'; query: HistoryQuery }
  | { kind: 'resample'; space: string; oid: string; start: number; end: number; step: number } | { kind: 'flush' } | { kind: 'clean' } | { kind: 'stop' };

/**
 * The sql.js history backend, the main thread's side: it hands rows to the
 * history thread (history-worker.ts) and waits for each batch to be
 * journaled and in the database, so a batch the host believes delivered
 * survives a crash. A thread that dies is started again on the next batch,
 * from the file and its journal.
 */
export class History implements HistoryBackend, HistoryReader {
  private worker: Worker | undefined;
  /** the thread being started: it takes rows once `accepting` resolves, answers everything once `ready` does */
  private opening: { accepting: Promise<void>; ready: Promise<void> } | undefined;
  /** resolves when the last thread started has exited */
  private gone: Promise<void> = Promise.resolve();
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (rows: HistoryRow[] | Bucket[] | undefined) => void; reject: (e: Error) => void }>();
  private stopped = false;
  private lastCommit = 0;
  stats: HistoryStats | undefined;

  constructor(readonly options: HistoryOptions, private readonly log: ModuleLogger) {}

  /** Start the thread and open (or create) the file; resolves once the journal is replayed (`accepting` is earlier). */
  start(): Promise<void> {
    return this.launch().ready;
  }

  /** Resolves once rows are taken: the file and the journal are open, while the journal may still be replaying. */
  accepting(): Promise<void> {
    return this.launch().accepting;
  }

  /**
   * A new thread starts only once the one before it has exited: a thread is
   * never terminated from outside while it runs WASM, nor started while
   * another one is being torn down (either crashed node with SIGSEGV under
   * load). A thread ends itself: after its `stop` answer, or after it
   * reported that it could not open.
   */
  private launch(): { accepting: Promise<void>; ready: Promise<void> } {
    if (this.opening) return this.opening;
    const accepting = settleable();
    const ready = settleable();
    const opening = { accepting: accepting.promise, ready: ready.promise };
    this.opening = opening;
    const failed = (err: Error) => { accepting.reject(err); ready.reject(err); };
    void this.gone.then(() => {
      if (this.stopped) throw new Error('the history is stopped');
      const w = new Worker(WORKER_FILE, { workerData: { historyWorker: true, options: this.options } });
      this.worker = w;
      this.gone = new Promise<void>((ended) => w.once('exit', () => ended()));
      w.on('message', (m: FromWorker) => {
        switch (m.kind) {
          case 'accepting': this.stats = m.stats; accepting.resolve(); break;
          case 'ready': this.stats = m.stats; accepting.resolve(); ready.resolve(); break;
          case 'failed': failed(new Error(m.message)); break; // the thread ends itself; the next batch tries again
          case 'warning': this.log.warning(m.message); break;
          case 'done': this.stats = m.stats; this.settle(m.id, undefined, m.rows); break;
          case 'error': this.settle(m.id, new Error(m.message)); break;
        }
      });
      w.on('error', (err) => this.log.error(`history thread of ${this.options.file} failed: ${err.message}`));
      w.on('exit', (code) => {
        if (this.worker === w) { this.worker = undefined; this.opening = undefined; }
        const lost = new Error(`history thread of ${this.options.file} ended (exit code ${code})`);
        failed(lost);
        for (const id of [...this.pending.keys()]) this.settle(id, lost);
        if (!this.stopped && code !== 0) this.log.error(`${lost.message}; it starts again on the next event`);
      });
    }).catch(failed);
    return opening;
  }

  /** Resolves once the rows are in the journal on disk (fsync'd) and in the database. */
  async write(rows: HistoryRow[]): Promise<void> {
    const wait = this.lastCommit + this.options.commitInterval * 1000 - Date.now();
    if (wait > 0 && rows.length < this.options.commitRows) await new Promise((r) => setTimeout(r, wait));
    this.lastCommit = Date.now();
    await this.call({ kind: 'insert', rows });
  }

  async query(query: HistoryQuery): Promise<HistoryRow[]> {
    return ((await this.call({ kind: 'query', query })) ?? []) as HistoryRow[];
  }

  /** The fill's intervals, computed in the history thread (store.ts resample). */
  async resample(space: string, oid: string, start: number, end: number, step: number): Promise<Bucket[]> {
    return ((await this.call({ kind: 'resample', space, oid, start, end, step })) ?? []) as Bucket[];
  }

  /** Checkpoint now: the file holds every stored row once this resolves. */
  async flush(): Promise<void> {
    await this.call({ kind: 'flush' });
  }

  /** Delete expired rows now (the thread does it every cleanInterval anyway). */
  async clean(): Promise<void> {
    await this.call({ kind: 'clean' });
  }

  info(): Record<string, unknown> {
    return { file: this.options.file, ...(this.stats ?? {}) };
  }

  /**
   * Last flush, then the thread ends itself. Only a thread that has not
   * ended STOP_GRACE seconds after its answer is terminated.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const w = this.worker;
    if (!w) return this.gone;
    try {
      // a thread still replaying its journal leaves the rest of it for the next start
      await this.opening?.accepting.catch(() => undefined);
      // a thread that ended by itself meanwhile (it could not open the file) has nothing to stop
      if (this.worker === w) await this.send({ kind: 'stop' }).catch((err: unknown) => { if (this.worker === w) throw err; });
    } finally {
      const late = setTimeout(() => {
        this.log.warning(`history thread of ${this.options.file} did not end ${STOP_GRACE} s after its stop: terminated`);
        void w.terminate();
      }, STOP_GRACE * 1000);
      await this.gone;
      clearTimeout(late);
    }
  }

  private async call(c: Call): Promise<HistoryRow[] | Bucket[] | undefined> {
    if (this.stopped) throw new Error('the history is stopped');
    // rows are taken while the journal replays; anything that reads or writes the file waits for the replay
    await (c.kind === 'insert' ? this.accepting() : this.start());
    if (this.pending.size >= this.options.maxPending) throw new Error(`history of ${this.options.file} is busy: ${this.pending.size} batches waiting`);
    return this.send(c);
  }

  private send(c: Call): Promise<HistoryRow[] | Bucket[] | undefined> {
    const w = this.worker;
    if (!w) return Promise.reject(new Error('the history thread is not running'));
    const id = this.nextId++;
    return new Promise<HistoryRow[] | Bucket[] | undefined>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      w.postMessage({ ...c, id });
    });
  }

  private settle(id: number, err?: Error, rows?: HistoryRow[] | Bucket[]): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    if (err) p.reject(err); else p.resolve(rows);
  }
}

/** A promise with its resolve and reject, marked handled (whoever awaits it still sees the rejection). */
function settleable(): { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void } {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => { resolve = res; reject = rej; });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}
