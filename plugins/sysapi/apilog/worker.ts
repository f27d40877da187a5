import { parentPort } from 'node:worker_threads';
import { SqliteFile } from '../../../core/toolkit/sqlite-file';
import { insert, trim } from './table';
import type { TableJob, TableDone } from './thread';

/**
 * The API call log's thread: it takes a copy of the user db, puts a batch of
 * records into its table api_log, trims it and hands the copy back. sql.js
 * costs several µs per inserted row; here it costs the calls nothing.
 */
async function run(job: TableJob): Promise<TableDone> {
  const db = await SqliteFile.image(job.image);
  try {
    // the batch alone fills the table (a flood): every stored row would be trimmed, one statement ends them all
    if (job.replaceAll) db.run('DELETE FROM api_log');
    if (job.records.length > 0) insert(db, job.records);
    const stored = trim(db, job.before, job.maxRows, job.maxBytes);
    const image = db.db.export();
    return { image, stored };
  } finally {
    db.close();
  }
}

const port = parentPort!;
port.on('message', (job: TableJob) => {
  run(job).then((done) => port.postMessage(done, [done.image.buffer as ArrayBuffer]), (err: unknown) => port.postMessage({ error: String((err as Error)?.message ?? err) }));
});
