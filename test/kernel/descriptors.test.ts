import fs from 'node:fs';
import net from 'node:net';
import test from 'ava';
import { makeDir, spawnController } from '../helpers/controller';
import { until } from '../helpers/wait';

/**
 * A request that times out (its headers not sent within request_timeout)
 * is answered 400 and its connection closed: the controller does not keep
 * the descriptor until the client closes. Counted in /proc/<pid>/fd of a
 * controller run as a child process.
 */

const N = 200;
const fds = (pid: number) => fs.readdirSync(`/proc/${pid}/fd`).length;

test('connections whose headers time out are answered 400 and their descriptors released while the clients keep them open', async (t) => {
  // 5 s: every connection is accepted before the first times out, even on a loaded machine (with 1 s, the first were
  // released before the last arrived, and all N were never held at once)
  const dir = makeDir(t, { ini: { webapi: { request_timeout: 5 } } });
  const child = await spawnController(t, dir);
  const pid = child.proc.pid!;
  await fetch(`${child.url}/health`);
  const base = fds(pid);
  const answers: string[] = [];
  const sockets: net.Socket[] = [];
  t.teardown(() => { for (const s of sockets) s.destroy(); });
  for (let i = 0; i < N; i++) {
    // allowHalfOpen: the client never closes its end, as a slow or idle one would not
    const s = net.connect({ port: child.port, host: '127.0.0.1', allowHalfOpen: true });
    s.on('error', () => undefined);
    let text = '';
    s.on('data', (c: Buffer) => { text += c.toString('latin1'); });
    s.on('end', () => answers.push(text));
    s.write('GET /health HTTP/1.1\r\nHost: x\r\n'); // the headers never end
    sockets.push(s);
  }
  await until('every connection at the controller', () => fds(pid) >= base + N, 30_000);
  t.log(`descriptors: ${base} before, ${fds(pid)} with ${N} connections open`);
  await until('every connection answered and ended by the controller', () => answers.length === N, 60_000);
  t.true(answers.every((a) => a.startsWith('HTTP/1.1 400 Bad Request')));
  const after = await until('the descriptors released', () => { const n = fds(pid); return n <= base + 5 && n; }, 30_000);
  t.log(`descriptors after the timeouts: ${after} (the ${N} clients still hold their ends)`);
  t.true(sockets.every((s) => !s.destroyed), 'the clients kept their ends');
});
