import test from 'ava';
import net from 'node:net';
import { startController, Keys } from '../helpers/controller';
import { until } from '../helpers/wait';

/** An upgrade request on a raw connection; resolves with the first bytes answered. */
function upgrade(port: number, path: string): Promise<{ sock: net.Socket; answer: string }> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => {
      sock.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
    });
    sock.once('data', (d) => resolve({ sock, answer: String(d) }));
    sock.once('error', reject);
  });
}

test('a client that resets its connection after an upgrade was refused leaves the controller running', async (t) => {
  const { port, client } = await startController(t, { ini: { webapi: { ws_max_clients: 0 } } });
  // refused by the server (no such path) and by the stream (ws_max_clients reached): each reset at once
  for (let i = 0; i < 20; i++) {
    for (const path of ['/no-such-upgrade', '/ws']) {
      const { sock, answer } = await upgrade(port, path);
      t.regex(answer, /^HTTP\/1\.1 (404|503) /);
      sock.resetAndDestroy();
    }
  }
  await until('the controller answering', async () => (await client.ok('test', { k: Keys.master })).acl);
  t.pass();
});
