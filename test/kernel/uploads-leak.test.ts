import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { makeDir, spawnController, Keys } from '../helpers/controller';
import { ECHO_PLUGIN } from '../helpers/echo-plugin';
import { until } from '../helpers/wait';

const B = 'XyZzY';

/** Multipart bodies a client may send, most of them broken. */
const BODIES: ((i: number) => string)[] = [
  // an empty file part followed by a non-empty one (what once left a temp file and a descriptor)
  () => `--${B}\r\nContent-Disposition: form-data; name="s"; filename=""\r\n\r\n\r\n--${B}\r\nContent-Disposition: form-data; name="t"; filename="b.txt"\r\n\r\nbody\r\n--${B}--\r\n`,
  // cut short inside a file part
  (i) => `--${B}\r\nContent-Disposition: form-data; name="s"; filename="a${i}.txt"\r\n\r\npartial`,
  // no closing delimiter
  () => `--${B}\r\nContent-Disposition: form-data; name="s"; filename="a.txt"\r\n\r\ndata\r\n`,
  // garbage headers
  () => `--${B}\r\nNonsense\r\n\r\nx\r\n--${B}--\r\n`,
  // a well-formed one with a file
  () => `--${B}\r\nContent-Disposition: form-data; name="s"; filename="ok.txt"\r\n\r\nfine\r\n--${B}--\r\n`,
];

/** Send one raw request and read the answer until the controller closes the connection. */
function raw(port: number, text: string, declared?: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let out = '';
    s.on('data', (d) => { out += d.toString(); });
    s.on('error', () => resolve(out));
    s.on('close', () => resolve(out));
    const len = declared ?? Buffer.byteLength(text);
    s.write(`POST /sys-api/echo?k=${Keys.ops} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n`
      + `Content-Type: multipart/form-data; boundary=${B}\r\nContent-Length: ${len}\r\n\r\n${text}`);
    // a body shorter than declared: the client gives up after a moment
    if (declared !== undefined) setTimeout(() => s.destroy(), 50);
  });
}

const fds = (pid: number) => fs.readdirSync(`/proc/${pid}/fd`).length;
/** What each open descriptor points at (a file's path, socket:[inode], anon_inode:...). */
const targets = (pid: number) => fs.readdirSync(`/proc/${pid}/fd`).map((fd) => {
  try { return fs.readlinkSync(`/proc/${pid}/fd/${fd}`); } catch { return 'gone'; }
});
/**
 * A leak per upload leaves hundreds of descriptors behind 500 uploads; one
 * or two more than before is the process itself opening something once
 * (seen under a CPU hog: a descriptor opened late by the runtime), logged.
 */
const ONCE = 2;

test('500 malformed uploads leave no file in the temp folder and no open descriptor per upload', async (t) => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'uploads-leak-'));
  t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }));
  const dir = makeDir(t, { files: { 'plugins/echo.js': ECHO_PLUGIN } });
  process.env.TMPDIR = tmp; // the controller's temp folder (this file runs in its own worker process)
  const child = await spawnController(t, dir);
  const pid = child.proc.pid!;
  await raw(child.port, BODIES[4](0)); // warm up
  await new Promise((r) => setTimeout(r, 300));
  const beforeTargets = targets(pid);
  const before = beforeTargets.length;
  const answers = new Map<string, number>();
  for (let i = 0; i < 500; i += 25) {
    await Promise.all(Array.from({ length: 25 }, async (_, j) => {
      const n = i + j;
      const body = BODIES[n % BODIES.length](n);
      // every other cut-short body declares more than it sends
      const a = await raw(child.port, body, n % BODIES.length === 1 && n % 2 ? body.length + 1000 : undefined);
      const status = /^HTTP\/1.1 (\d+)/.exec(a)?.[1] ?? 'none';
      answers.set(status, (answers.get(status) ?? 0) + 1);
    }));
  }
  t.log(`answers: ${JSON.stringify(Object.fromEntries(answers))}`);
  // the controller releases what each request held once it has seen the connection end: a moment on a loaded machine
  await until('temp files and descriptors released', () => fs.readdirSync(tmp).length === 0 && fds(pid) <= before, 30_000)
    .catch(() => undefined); // the assertions below say what was left
  t.deepEqual(fs.readdirSync(tmp), [], 'no temp file');
  const after = targets(pid);
  if (after.length > before) t.log(`descriptors ${before} before, ${after.length} after: ${JSON.stringify(after.filter((x) => !beforeTargets.includes(x)))}`);
  t.false(after.some((x) => x.startsWith(tmp)), 'no descriptor open on the temp folder');
  t.true(after.length <= before + ONCE, `descriptors: ${before} before, ${after.length} after`);
  // and the controller still answers
  t.is((await child.client.get('test', { k: Keys.ops })).status, 200);
});

test('a multipart body behind a wrong key in the query or X-Auth-Key is refused before it is read', async (t) => {
  const dir = makeDir(t, { files: { 'plugins/echo.js': ECHO_PLUGIN } });
  const child = await spawnController(t, dir);
  for (const where of ['query', 'header'] as const) {
    const answer = await new Promise<string>((resolve) => {
      const s = net.connect(child.port, '127.0.0.1');
      let out = '';
      s.on('data', (d) => {
        out += d.toString();
        if (out.includes('\r\n\r\n')) { s.destroy(); resolve(out); }
      });
      s.on('error', () => resolve(out));
      const q = where === 'query' ? '?k=wrongwrongwrongwrong' : '';
      const h = where === 'header' ? 'X-Auth-Key: wrongwrongwrongwrong\r\n' : '';
      // declares 50 MB and sends a few bytes: only an answer before the body can arrive
      s.write(`POST /sys-api/echo${q} HTTP/1.1\r\nHost: x\r\n${h}Content-Type: multipart/form-data; boundary=${B}\r\n`
        + `Content-Length: 50000000\r\n\r\n--${B}\r\nContent-Disposition: form-data; name="s"; filename="a"\r\n\r\n`);
    });
    t.regex(answer, /^HTTP\/1.1 403/, where);
  }
});
