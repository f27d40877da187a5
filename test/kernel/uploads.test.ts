import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import type * as Helper from '../helpers/controller';
import { ECHO_PLUGIN } from '../helpers/echo-plugin';

// Multipart uploads land in os.tmpdir() first. This file runs in its own ava
// worker, so pointing TMPDIR at a private folder lets the tests see every
// temporary file the controller leaves behind. The controller is loaded only
// after that: the upload parser takes its folder when it is loaded.
const uploads = fs.mkdtempSync(path.join(os.tmpdir(), 'uploads-'));
process.env.TMPDIR = uploads;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const load = async () => require('../helpers/controller') as typeof Helper;
test.after.always(() => fs.rmSync(uploads, { recursive: true, force: true }));

/** temporary upload files left in the private temp folder (controller dirs excluded) */
const leftovers = () => fs.readdirSync(uploads).filter((f) => !f.startsWith('ctl-'));

test.serial('uploaded files are removed after the call, also the ones of a name that is not read', async (t) => {
  const { startController, Keys } = await load();
  const { url } = await startController(t, { files: { 'plugins/echo.js': ECHO_PLUGIN } });
  const fd = new FormData();
  fd.set('k', Keys.ops);
  fd.append('s', new Blob(['first']), 'a.txt');
  fd.append('s', new Blob(['second']), 'b.txt');
  fd.append('s', new Blob(['third']), 'c.txt');
  const r = await fetch(`${url}/sys-api/echo`, { method: 'POST', body: fd });
  t.is(r.status, 200);
  t.is(((await r.json()) as any).params.s, 'first');
  t.deepEqual(leftovers(), []);
});

test.serial('a refused upload (413) and a call that fails leave no temporary file', async (t) => {
  const { startController, Keys } = await load();
  const { url } = await startController(t, { files: { 'plugins/echo.js': ECHO_PLUGIN }, ini: { webapi: { max_body_size: 2048 } } });
  const before = leftovers();
  const big = new FormData();
  big.set('k', Keys.ops);
  big.set('s', new Blob(['y'.repeat(5000)]), 'big.txt');
  t.is((await fetch(`${url}/sys-api/echo`, { method: 'POST', body: big })).status, 413);
  const unknown = new FormData();
  unknown.set('k', Keys.ops);
  unknown.set('zzz', new Blob(['z']), 'z.txt');
  t.is((await fetch(`${url}/sys-api/echo`, { method: 'POST', body: unknown })).status, 400);
  t.deepEqual(leftovers(), before);
});
