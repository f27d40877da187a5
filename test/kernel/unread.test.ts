import net from 'node:net';
import test from 'ava';
import { bigPlugin } from '../helpers/big-plugin';
import { startController } from '../helpers/controller';

/**
 * Answers a client does not read count against its connection
 * ([webapi] max_unread): its next pipelined request waits, not run, until
 * the client reads; past max_waiting waiting requests the connection ends.
 */

const BIG_PLUGIN = bigPlugin(true);

const ANSWER = 1_000_000;
const PIPELINED = 100;

async function calls(url: string): Promise<number> {
  return ((await (await fetch(`${url}/sys-api/calls`)).json()) as { calls: number }).calls;
}

/** The count once it has not moved for a second. */
async function settled(url: string): Promise<number> {
  let last = -1;
  for (;;) {
    const now = await calls(url);
    if (now === last) return now;
    last = now;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/** PIPELINED requests of 1 MB answers in one write, from a client that does not read (yet). */
function pipeline(port: number): net.Socket {
  const c = net.connect(port, '127.0.0.1');
  c.pause();
  c.write(`GET /sys-api/big?n=${ANSWER} HTTP/1.1\r\nHost: x\r\n\r\n`.repeat(PIPELINED));
  return c;
}

test('a client that pipelines and does not read gets few of its requests run; once it reads, every answer comes, in order', async (t) => {
  const { url, port } = await startController(t, { files: { 'plugins/big.js': BIG_PLUGIN } });
  const c = pipeline(port);
  t.teardown(() => c.destroy());
  const ran = await settled(url);
  // the socket buffers of both ends take a few answers (some MB on loopback), max_unread (1 MiB) one more
  t.log(`${ran} of ${PIPELINED} requests ran while the client read nothing`);
  t.true(ran >= 1 && ran <= 20, `${ran} ran`);

  // now it reads: every answer arrives, each whole, in the order asked
  let text = '';
  let answers = 0;
  const order: number[] = [];
  await new Promise<void>((resolve, reject) => {
    c.setEncoding('latin1');
    c.on('data', (chunk: string) => {
      text += chunk;
      for (;;) {
        const head = text.indexOf('\r\n\r\n');
        if (head < 0) return;
        const length = Number(/content-length: (\d+)/i.exec(text.slice(0, head))![1]);
        if (text.length < head + 4 + length) return;
        const body = text.slice(head + 4, head + 4 + length);
        order.push(Number(body.slice(ANSWER + 1, -1)));
        text = text.slice(head + 4 + length);
        if (++answers === PIPELINED) resolve();
      }
    });
    c.on('error', reject);
    c.resume();
  });
  t.deepEqual(order, order.slice().sort((a, b) => a - b));
  t.is(await calls(url), PIPELINED);
});

test('past max_waiting requests waiting for unread answers, the connection ends', async (t) => {
  const { url, port } = await startController(t, { files: { 'plugins/big.js': BIG_PLUGIN }, ini: { webapi: { max_waiting: 5 } } });
  const c = pipeline(port);
  c.on('error', () => undefined);
  const ran = await settled(url);
  // reading now, it gets what was sent before the end, then the end: not the hundred answers
  let bytes = 0;
  c.on('data', (chunk: Buffer) => { bytes += chunk.length; });
  const closed = new Promise<void>((resolve) => c.once('close', () => resolve()));
  c.resume();
  await closed;
  t.true(ran < 30, `${ran} ran`);
  t.true(bytes < (ran + 1) * (ANSWER + 200), `${bytes} bytes came`);
  t.is(await calls(url), ran, 'the rest never ran');
});
