import test from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { Keys } from '../helpers/controller';
import { startStreamController } from '../helpers/stream-client';
import { until } from '../helpers/wait';

const ROOT = path.resolve(__dirname, '..', '..', '..');

/** The client example of plugins/stream/README.md, as written there. */
function readmeExample(): string {
  const readme = fs.readFileSync(path.join(ROOT, 'plugins', 'stream', 'README.md'), 'utf8');
  const m = /```js\n([\s\S]*?)```/.exec(readme);
  if (!m) throw new Error('no js example in plugins/stream/README.md');
  return m[1];
}

test('the stream README client example runs as written and prints live state', async (t) => {
  const code = readmeExample();
  t.true(code.split('\n').filter(Boolean).length <= 12, 'a short example');
  const { url, client } = await startStreamController(t);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'readme-ws-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'client.js');
  // only the address changes (the README's port is the default one)
  t.regex(code, /ws:\/\/127\.0\.0\.1:8812\/ws/);
  fs.writeFileSync(file, code.replace('ws://127.0.0.1:8812/ws', `${url.replace('http', 'ws')}/ws`));
  const child = spawn(process.execPath, [file], {
    env: { PATH: process.env.PATH ?? '', KEY: Keys.master, NODE_PATH: path.join(ROOT, 'node_modules') }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  // the current state first, then a change
  await until('the example to print the other sensor', () => /^sensor:other\/t2 /m.test(out), 10_000).catch(() => t.fail(out));
  await client.ok('update', { k: Keys.master, i: 'sensor:home/t1', s: 1, v: '21.5' });
  await until('the example to print the change', () => /^sensor:home\/t1 1 21\.5$/m.test(out), 10_000).catch(() => t.fail(out));
  t.regex(out, /^sensor:home\/t1 1 21\.5$/m);
});
