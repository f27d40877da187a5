import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { history, keepingLog, tmpDir, now } from '../helpers/history-db';

/**
 * The history thread ends itself, never terminated from outside while it
 * runs WASM, and a new one starts only once the last one has exited: both
 * once crashed node with SIGSEGV under load (test/stress/history.ts runs
 * this for minutes).
 */

// counts terminate() calls on every Worker of this test process
let terminated = 0;
const terminate = Worker.prototype.terminate.bind(Worker.prototype);
Worker.prototype.terminate = function (this: Worker) { terminated++; return terminate.call(this) as never; } as typeof terminate;
const threads = () => process.getActiveResourcesInfo().filter((r) => r === 'MessagePort').length;

test.serial('stop: the last checkpoint, then the thread ends by itself (no terminate), before stop resolves', async (t) => {
  const before = terminated;
  const file = path.join(tmpDir(t), 'h.db');
  const h = history(t, { file });
  await h.write([['', now(), 'sensor:g/a', 1, '1']]);
  const running = threads();
  await h.stop();
  t.is(terminated, before);
  t.true(threads() < running, 'the thread is gone when stop resolves');
  t.true(fs.statSync(file).size > 0);
});

test.serial('stop while the thread is still opening the file waits for it, then it ends by itself', async (t) => {
  const before = terminated;
  const h = history(t, { file: path.join(tmpDir(t), 'h.db') });
  const opening = h.start();
  await h.stop();
  await opening.catch(() => undefined);
  t.is(terminated, before);
  await t.throwsAsync(h.write([['', now(), 'sensor:g/a', 1, '1']]), { message: /stopped/ });
});

test.serial('a file that cannot be opened: each write fails with the reason, the thread ends itself, the next write starts a new one', async (t) => {
  const before = terminated;
  const dir = tmpDir(t);
  fs.writeFileSync(path.join(dir, 'blocker'), 'a file where a folder should be');
  const log = keepingLog();
  const h = history(t, { file: path.join(dir, 'blocker', 'h.db') }, log);
  for (let i = 0; i < 5; i++) {
    await t.throwsAsync(h.write([['', now(), 'sensor:g/a', 1, '1']]), { message: /EEXIST|ENOTDIR|ended/ });
    await new Promise((r) => setTimeout(r, 20));
  }
  await h.stop();
  t.is(terminated, before);
  t.deepEqual(log.lines.filter((l) => l.startsWith('40 ')), [], 'a thread that ended itself is no error of its own');
});
