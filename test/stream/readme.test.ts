import test, { type ExecutionContext } from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { Keys } from '../helpers/controller';
import { startStreamController } from '../helpers/stream-client';
import { until } from '../helpers/wait';

const ROOT = path.resolve(__dirname, '..', '..', '..');

/** The client examples of plugins/stream/README.md, as written there: the first (live state), the second (resuming). */
function readmeExample(which = 0): string {
  const readme = fs.readFileSync(path.join(ROOT, 'plugins', 'stream', 'README.md'), 'utf8');
  const m = [...readme.matchAll(/```js\n([\s\S]*?)```/g)][which];
  if (!m) throw new Error(`no js example ${which + 1} in plugins/stream/README.md`);
  return m[1];
}

/** Run an example against the controller at `url` (the README's address replaced); its output so far. */
function runExample(t: ExecutionContext, code: string, url: string): () => string {
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
  return () => out;
}

/**
 * A TCP relay to `port` whose connections the test can cut (each end closed
 * in order) and whose new connections it can hold (relayed on `open`).
 */
async function relay(t: ExecutionContext, port: number) {
  const live = new Set<net.Socket>();
  let held: net.Socket[] | undefined;
  const pipe = (s: net.Socket) => {
    const up = net.connect(port, '127.0.0.1');
    for (const x of [s, up]) { live.add(x); x.on('error', () => {}); x.on('close', () => live.delete(x)); }
    s.pipe(up).pipe(s);
  };
  const server = net.createServer((s) => { if (held) held.push(s); else pipe(s); });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => { server.close(); for (const s of live) s.destroy(); });
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    cutAndHold() { held = []; for (const s of live) s.end(); },
    open() { const h = held ?? []; held = undefined; h.forEach(pipe); },
    get waiting() { return held?.length ?? 0; },
  };
}

test('the stream README client example runs as written and prints live state', async (t) => {
  const code = readmeExample();
  t.true(code.split('\n').filter(Boolean).length <= 12, 'a short example');
  const { url, client } = await startStreamController(t);
  const out = runExample(t, code, url);
  // the current state first, then a change
  await until('the example to print the other sensor', () => /^sensor:other\/t2 /m.test(out()), 10_000).catch(() => t.fail(out()));
  await client.ok('update', { k: Keys.master, i: 'sensor:home/t1', s: 1, v: '21.5' });
  await until('the example to print the change', () => /^sensor:home\/t1 1 21\.5$/m.test(out()), 10_000).catch(() => t.fail(out()));
  t.regex(out(), /^sensor:home\/t1 1 21\.5$/m);
});

test('the stream README resuming example runs as written: cut off, it gets what changed meanwhile, once, and no gap', async (t) => {
  const { url, client } = await startStreamController(t);
  const link = await relay(t, Number(new URL(url).port));
  const out = runExample(t, readmeExample(1), link.url);
  await until('the example to print the state', () => /^\d+ sensor:other\/t2 /m.test(out()), 10_000).catch(() => t.fail(out()));
  // its connection cut, its next one held until the change is made
  link.cutAndHold();
  await until('the example to come back', () => link.waiting > 0, 10_000).catch(() => t.fail(out()));
  await client.ok('update', { k: Keys.master, i: 'sensor:home/t1', s: 1, v: '33' });
  link.open();
  await until('the example to print the missed change', () => /^\d+ sensor:home\/t1 1 33$/m.test(out()), 10_000).catch(() => t.fail(out()));
  // then live again
  await client.ok('update', { k: Keys.master, i: 'sensor:home/t1', v: '34' });
  await until('the example to print the live change', () => /^\d+ sensor:home\/t1 1 34$/m.test(out()), 10_000).catch(() => t.fail(out()));
  t.is(out().match(/ sensor:home\/t1 1 33$/gm)?.length, 1, 'once');
  t.notRegex(out(), /gap/, 'no gap: the ring had it');
  t.is(out().match(/ sensor:other\/t2 /gm)?.length, 1, 'no second state: the missed events are the state');
  const seqs = [...out().matchAll(/^(\d+) sensor:home\/t1 1 3[34]$/gm)].map((m) => Number(m[1]));
  t.true(seqs[1] > seqs[0]);
});
