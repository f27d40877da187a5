import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { ApiLogRecord } from './table';

/** A batch for the API call log's thread (worker.ts): the user db's bytes and the records to add. */
export interface TableJob {
  image: Uint8Array;
  records: ApiLogRecord[];
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
 */
export class TableThread {
  private worker?: Worker;
  private waiting?: { resolve: (d: TableDone) => void; reject: (e: Error) => void };

  run(job: TableJob): Promise<TableDone> {
    if (this.waiting) return Promise.reject(new Error('the API call log thread is busy'));
    const w = this.worker ?? this.start();
    return new Promise<TableDone>((resolve, reject) => {
      this.waiting = { resolve, reject };
      w.postMessage(job, [job.image.buffer as ArrayBuffer]);
    });
  }

  private start(): Worker {
    const w = new Worker(WORKER_FILE);
    w.unref();
    const settle = (f: (p: NonNullable<TableThread['waiting']>) => void) => {
      const p = this.waiting;
      this.waiting = undefined;
      if (p) f(p);
    };
    w.on('message', (m: TableDone | { error: string }) => settle((p) => ('error' in m ? p.reject(new Error(m.error)) : p.resolve(m))));
    w.on('error', (err) => settle((p) => p.reject(err)));
    w.on('exit', () => {
      if (this.worker === w) this.worker = undefined;
      settle((p) => p.reject(new Error('the API call log thread stopped')));
    });
    this.worker = w;
    return w;
  }

  async stop(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    if (w) await w.terminate();
  }
}
