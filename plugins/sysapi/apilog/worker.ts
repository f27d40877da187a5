import { parentPort } from 'node:worker_threads';
import { SqliteFile } from '../../../core/toolkit/sqlite-file';
import { ApiLogTable } from './table';
import type { TableJob, TableDone } from './thread';

/**
 * The API call log's thread: it holds a copy of the user db, puts a batch
 * of records into its table api_log, trims it and hands the bytes back,
 * keeping the copy for the next batch (which brings new bytes only when
 * the controller's user db changed meanwhile). sql.js costs a few µs per
 * inserted row; here it costs the calls nothing.
 */
let table: ApiLogTable | undefined;

async function run(job: TableJob): Promise<TableDone> {
  if (job.image) {
    table?.db.close();
    table = undefined;
    table = new ApiLogTable(await SqliteFile.image(job.image));
  }
  if (!table) throw new Error('no copy of the user db');
  try {
    // the batch alone fills the table (a flood): every stored row would be trimmed, one statement ends them all
    if (job.replaceAll) table.clear();
    table.insert(job.batch);
    const stored = table.trim(job.before, job.maxRows, job.maxBytes);
    return { image: table.db.db.export(), stored };
  } catch (err) {
    // the next batch brings the controller's bytes
    table.db.close();
    table = undefined;
    throw err;
  }
}

const port = parentPort!;
port.on('message', (job: TableJob) => {
  run(job).then((done) => port.postMessage(done, [done.image.buffer as ArrayBuffer]), (err: unknown) => port.postMessage({ error: String((err as Error)?.message ?? err) }));
});
