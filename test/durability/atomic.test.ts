import test from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { skipWhen } from '../helpers/tools';

const ATOMIC = path.resolve(__dirname, '..', '..', 'core', 'toolkit', 'atomic-file.js');
const LIMIT = 64 * 1024;

/** A real process whose file size limit (RLIMIT_FSIZE) makes writes past LIMIT bytes fail with EFBIG, as a full disk would. */
const WRITER = `
const { writeFileAtomic, writeFileAtomicSync } = require(${JSON.stringify(ATOMIC)});
const [file, size] = [process.argv[1], Number(process.argv[2])];
(async () => {
  const out = {};
  try { await writeFileAtomic(file, Buffer.alloc(size, 120)); out.async = 'ok'; } catch (e) { out.async = e.code; }
  try { writeFileAtomicSync(file, Buffer.alloc(size, 121)); out.sync = 'ok'; } catch (e) { out.sync = e.code; }
  console.log(JSON.stringify(out));
})();
`;

const prlimit = spawnSync('prlimit', ['--version']).status === 0;

skipWhen(!prlimit && 'needs prlimit')('a write that fails half-way (EFBIG) keeps the old file and leaves no temp file behind', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'atomic-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'data.json');
  fs.writeFileSync(file, 'old content');
  const run = (size: number) => JSON.parse(execFileSync('prlimit', [`--fsize=${LIMIT}`, process.execPath, '-e', WRITER, file, String(size)], { encoding: 'utf8' }));

  t.deepEqual(run(LIMIT * 3), { async: 'EFBIG', sync: 'EFBIG' });
  t.is(fs.readFileSync(file, 'utf8'), 'old content');
  t.deepEqual(fs.readdirSync(dir), ['data.json'], 'the half-written temp files are gone');

  // the same writer under the limit: the failures above came from the limit, not the harness
  t.deepEqual(run(100), { async: 'ok', sync: 'ok' });
  t.is(fs.readFileSync(file, 'utf8'), 'y'.repeat(100));
  t.deepEqual(fs.readdirSync(dir), ['data.json']);
});
