/**
 * A keyless flood of the event stream, run as its own process (so its
 * clients do not share the test's event loop): `node keyless-flood.js URL
 * LOOPS ADDRESS`. Each loop opens /ws with X-Real-IP ADDRESS and no key;
 * every other loop closes at once, the rest wait to be closed; both open
 * again at once. Prints "opened N" each 200 ms.
 */
import WebSocket from 'ws';

const [url, loops, address] = [process.argv[2], Number(process.argv[3]), process.argv[4]];
let opened = 0;

function loop(i: number): void {
  const ws = new WebSocket(url, { headers: { 'X-Real-IP': address } });
  ws.on('open', () => {
    opened++;
    if (i % 2) ws.close();
  });
  ws.on('error', () => undefined);
  ws.on('close', () => setImmediate(() => loop(i)));
}

for (let i = 0; i < loops; i++) loop(i);
setInterval(() => process.stdout.write(`opened ${opened}\n`), 200);
