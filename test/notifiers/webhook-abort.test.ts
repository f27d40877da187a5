import 'reflect-metadata';
import test from 'ava';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { jsonType } from '../../plugins/notifiers/json';
import { withDeadline } from '../../core/toolkit/deadline';
import { until } from '../helpers/wait';

/**
 * A web hook's request ends with the host's clock or the notifier's stop:
 * its connection is closed then, not left open until a receiver that holds
 * it answers (the request listens to both signals itself, without
 * node:http's `signal` option).
 */

/** A receiver that never answers; it notes when each connection closes. */
async function silentReceiver(t: { teardown(fn: () => unknown): void }) {
  const sockets: { closed: boolean }[] = [];
  const server = http.createServer((req) => {
    const s = { closed: false };
    sockets.push(s);
    req.socket.on('close', () => { s.closed = true; });
    req.resume();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }));
  return { uri: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, sockets };
}

const events = [{ oid: 'sensor:g/a', full_id: 'g/a', type: 'sensor' as const, group: 'g', id: 'a', status: 1, value: '1', t: 1 }];

/** A json web hook's endpoint, made as the host makes it (no API keys: no `$ID` notify key here). */
const hook = (uri: string) => jsonType.create!({ id: 'hook', type: 'json', uri, events: [] } as never, undefined as never);

test('a send cut by the host\'s timeout closes its connection', async (t) => {
  const rcv = await silentReceiver(t);
  const ep = hook(rcv.uri);
  t.teardown(() => ep.stop());
  const e = await t.throwsAsync(withDeadline(0.3, (signal) => ep.send('state', events, signal)));
  t.is(e?.message, 'no answer within 0.3 s');
  // the endpoint is not stopped: only the signal can have closed it
  await until('the connection closed', () => rcv.sockets.length === 1 && rcv.sockets[0].closed);
  t.pass();
});

test('the stop of a notifier ends its request in hand', async (t) => {
  const rcv = await silentReceiver(t);
  const ep = hook(rcv.uri);
  const never = new AbortController().signal;
  const sent = ep.send('state', events, never);
  sent.catch(() => undefined); // awaited below, after the stop
  await until('the request arrived', () => rcv.sockets.length === 1);
  await ep.stop();
  const e = await t.throwsAsync(sent);
  t.is(e?.message, 'stopped');
  await until('the connection closed', () => rcv.sockets[0].closed);
});

test('a signal aborted before the send: no request goes out', async (t) => {
  const rcv = await silentReceiver(t);
  const ep = hook(rcv.uri);
  t.teardown(() => ep.stop());
  const ac = new AbortController();
  ac.abort(new Error('gone'));
  const e = await t.throwsAsync(ep.send('state', events, ac.signal));
  t.is(e?.message, 'gone');
  t.is(rcv.sockets.length, 0);
});
