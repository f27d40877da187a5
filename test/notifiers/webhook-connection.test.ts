import 'reflect-metadata';
import test from 'ava';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo, Socket } from 'node:net';
import { jsonType } from '../../plugins/notifiers/json';
import { WebhookDefaults } from '../../plugins/notifiers/webhook';
import type { DeliveryError } from '../../plugins/notifiers/contract';
import { selfSignedCert } from '../helpers/broker';
import { until } from '../helpers/wait';

/**
 * A web hook's connections (an undici pool of its own per notifier): kept
 * alive between frames, a connection closed under a request fails that
 * request as an outage (the host tries it again) and the next goes on a new
 * one, an answer is read up to its bound in bytes however it is framed, no
 * redirect is followed, a certificate is checked, and the notifier's stop
 * closes what it holds.
 */

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, n: number) => void;

/** A receiver on loopback whose answers `handle` writes; it keeps its connections and the bodies it read. */
async function receiver(t: { teardown(fn: () => unknown): void }, handle: Handler, server: http.Server = http.createServer()) {
  const sockets: { socket: Socket; closed: boolean }[] = [];
  const bodies: string[] = [];
  server.on('connection', (socket: Socket) => {
    const s = { socket, closed: false };
    sockets.push(s);
    socket.on('close', () => { s.closed = true; });
  });
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    let body = '';
    req.on('data', (d: Buffer) => { body += d.toString(); });
    req.on('end', () => { bodies.push(body); handle(req, res, bodies.length); });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }));
  const scheme = server instanceof https.Server ? 'https' : 'http';
  return { uri: `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, sockets, bodies };
}

const ok: Handler = (_req, res) => { res.setHeader('Content-Type', 'application/json'); res.end('{"result":"OK"}'); };

const events = (n: number) => Array.from({ length: n }, (_, i) => ({ oid: `sensor:g/s${i}`, full_id: `g/s${i}`, type: 'sensor' as const, group: 'g', id: `s${i}`, status: 1, value: String(i), t: 1 }));

const hook = (uri: string) => jsonType.create!({ id: 'hook', type: 'json', uri, events: [] } as never, undefined as never);

const never = new AbortController().signal;

test('frames go one after the other over one kept-alive connection; the stop closes it', async (t) => {
  const rcv = await receiver(t, ok);
  const ep = hook(rcv.uri);
  for (let i = 0; i < 5; i++) await ep.send('state', events(3), never);
  t.is(rcv.bodies.length, 5);
  t.is(rcv.sockets.length, 1);
  t.false(rcv.sockets[0].closed);
  await ep.stop();
  await until('the connection closed at the stop', () => rcv.sockets[0].closed);
  t.pass();
});

test('a connection closed under a request fails it as an outage; the next try goes on a new connection', async (t) => {
  // the first request is read whole, then its connection is cut without an answer
  const rcv = await receiver(t, (req, res, n) => (n === 1 ? req.socket.destroy() : ok(req, res, n)));
  const ep = hook(rcv.uri);
  t.teardown(() => ep.stop());
  const e = await t.throwsAsync<DeliveryError>(ep.send('state', events(2), never));
  t.true(e?.transient, `an outage, tried again by the host: ${e?.message}`);
  t.deepEqual(e?.remaining?.length, 2);
  await ep.send('state', events(2), never);
  t.is(rcv.bodies.length, 2);
  t.is(rcv.bodies[0], rcv.bodies[1], 'the same frame, byte for byte');
  t.is(rcv.sockets.length, 2);
});

test('a connection the receiver closed while idle is not used again', async (t) => {
  const rcv = await receiver(t, ok);
  const ep = hook(rcv.uri);
  t.teardown(() => ep.stop());
  await ep.send('state', events(1), never);
  rcv.sockets[0].socket.end();
  await until('the idle connection closed', () => rcv.sockets[0].closed);
  await ep.send('state', events(1), never);
  t.is(rcv.bodies.length, 2);
  t.is(rcv.sockets.length, 2);
});

test('an endless answer is read up to the bound in bytes and its connection closed', async (t) => {
  // chunked, no length: the answer goes on until the client closes the connection (a client reading it whole never ends)
  const rcv = await receiver(t, (_req, res) => {
    res.setHeader('Content-Type', 'application/json');
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    const more = () => {
      while (!res.destroyed && res.write(chunk));
      if (!res.destroyed) res.once('drain', more);
    };
    more();
  });
  const ep = hook(rcv.uri);
  t.teardown(() => ep.stop());
  const e = await t.throwsAsync<DeliveryError>(ep.send('state', events(1), never));
  t.is(e?.message, `answer longer than ${WebhookDefaults.max_answer_bytes} bytes`);
  await until('the connection closed', () => rcv.sockets[0].closed);
});

test('a redirect is not followed: the 3xx is the answer', async (t) => {
  const rcv = await receiver(t, (_req, res) => { res.statusCode = 302; res.setHeader('Location', '/elsewhere'); res.end(); });
  const ep = hook(rcv.uri);
  t.teardown(() => ep.stop());
  const e = await t.throwsAsync<DeliveryError>(ep.send('state', events(1), never));
  t.is(e?.status, 302);
  t.is(rcv.bodies.length, 1);
});

test('https: a certificate the system does not trust is refused, and that is no outage', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hook-tls-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const pem = selfSignedCert(dir);
  if (!pem) {
    t.log('openssl is missing: not run');
    t.pass();
    return;
  }
  const rcv = await receiver(t, ok, https.createServer({ cert: fs.readFileSync(pem.cert), key: fs.readFileSync(pem.key) }));
  const ep = hook(rcv.uri);
  t.teardown(() => ep.stop());
  const e = await t.throwsAsync<DeliveryError>(ep.send('state', events(1), never));
  t.regex(e?.message ?? '', /self.signed|certificate/i);
  t.falsy(e?.transient);
  t.is(rcv.bodies.length, 0);
});
