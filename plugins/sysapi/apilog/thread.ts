import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Batch } from './ring';

/** A batch for the API call log's thread (worker.ts). */
export interface TableJob {
  /** the user db's bytes; none: the thread's copy from the last batch is current */
  image?: Uint8Array;
  batch: Batch;
  /** the records alone fill the table: the stored ones go first */
  replaceAll: boolean;
  /** rows older (Unix seconds) go; 0: none by age */
  before: number;
  maxRows: number;
  maxBytes: number;
}

/** The batch done: the user db's bytes with the table written, and how many rows it has. */
export interface TableDone { image: Uint8Array; stored: number }

const WORKER_FILE = path.join(__dirname, 'worker.js');

/**
 * The thread that writes the API call log's table, started on the first
 * batch. One batch at a time (the store waits for each): the only queue
 * is the one message in flight, as large as the store's buffer bounds.
 * The thread keeps its copy of the user db between batches: a batch comes
 * with the user db's bytes only when that copy is not the controller's
 * (the first batch, a change made on the controller's side, a failure).
 */
export class TableThread {
  private worker?: Worker;
  private waiting?: { resolve: (d: TableDone) => void; reject: (e: Error) => void };
  /** whether the thread holds a copy of the user db (the last batch's result) */
  holdsCopy = false;

  run(job: TableJob): Promise<TableDone> {
    if (this.waiting) return Promise.reject(new Error('the API call log thread is busy'));
    const w = this.worker ?? this.start();
    if (!job.image && !this.holdsCopy) return Promise.reject(new Error('the API call log thread holds no copy of the user db'));
    this.holdsCopy = false; // until the thread answers
    return new Promise<TableDone>((resolve, reject) => {
      this.waiting = {
        resolve: (d) => {
          this.holdsCopy = true;
          resolve(d);
        },
        reject,
      };
      // the batch is copied (the store redoes it on this thread if the copy turns out stale); the image moves
      w.postMessage(job, job.image ? [job.image.buffer as ArrayBuffer] : []);
    });
  }

  private start(): Worker {
    const w = new Worker(WORKER_FILE);
    w.unref();
    this.holdsCopy = false;
    const settle = (f: (p: NonNullable<TableThread['waiting']>) => void) => {
      const p = this.waiting;
      this.waiting = undefined;
      if (p) f(p);
    };
    w.on('message', (m: TableDone | { error: string }) => settle((p) => ('error' in m ? p.reject(new Error(m.error)) : p.resolve(m))));
    w.on('error', (err) => settle((p) => p.reject(err)));
    w.on('exit', () => {
      if (this.worker === w) {
        this.worker = undefined;
        this.holdsCopy = false;
      }
      settle((p) => p.reject(new Error('the API call log thread stopped')));
    });
    this.worker = w;
    return w;
  }

  async stop(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.holdsCopy = false;
    if (w) await w.terminate();
  }
}
