import test from 'ava';
import { Webhook } from 'standardwebhooks';
import { Keys, startController } from '../helpers/controller';
import { Receiver, type ReceivedRequest } from '../helpers/receiver';
import { notifierFiles, stateEvent, subscribeAll } from '../helpers/notifiers';

/**
 * Standard Webhooks' own receiver library (`standardwebhooks`) verifies
 * every signed frame of every web hook type: the test frame and an event
 * frame, with one secret and during a rotation (both secrets sign, each
 * alone verifies); after the grace time the previous secret no longer does.
 */
const k = Keys.master;
const secret = (fill: number) => `whsec_${Buffer.alloc(32, fill).toString('base64')}`;
const NEW = secret(7);
const OLD = secret(8);

/** What Standard Webhooks signs: the body, or the query string of the GET-only `http` type. */
const payloadOf = (r: ReceivedRequest) => (r.method === 'GET' ? r.url.search.slice(1) : r.body);
const headersOf = (r: ReceivedRequest) => ({
  'webhook-id': String(r.headers['webhook-id']),
  'webhook-timestamp': String(r.headers['webhook-timestamp']),
  'webhook-signature': String(r.headers['webhook-signature']),
});
const verifies = (secretText: string, r: ReceivedRequest): boolean => {
  try {
    // the form and query payloads are no JSON: verified, not parsed
    new Webhook(secretText).verify(payloadOf(r), headersOf(r), { jsonParse: false });
    return true;
  } catch {
    return false;
  }
};

for (const type of ['json', 'http-post', 'http']) {
  test(`standard webhooks › ${type}: the test frame and an event frame verify with the secret, not with another`, async (t) => {
    const rcv = await Receiver.start(t);
    const { client } = await startController(t, {
      files: notifierFiles({ hook: { type, uri: `${rcv.uri}?t=${type}`, signing_secret: NEW, events: subscribeAll } }),
    });
    await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:env/temp', 1, '21.5')] });
    const frames = await rcv.waitFor(2);
    for (const r of frames) {
      t.true(verifies(NEW, r), `${r.method} ${r.url.search}`);
      t.false(verifies(OLD, r));
    }
  });

  test(`standard webhooks › ${type}: during a secret rotation each secret verifies; after it only the new one`, async (t) => {
    const rcv = await Receiver.start(t);
    const now = Math.floor(Date.now() / 1000);
    const { client } = await startController(t, {
      files: notifierFiles({
        rotating: { type, uri: `${rcv.uri}?rotating`, signing_secret: NEW, signing_secret_previous: OLD, signing_previous_until: now + 3600, events: subscribeAll },
        rotated: { type, uri: `${rcv.uri}?rotated`, signing_secret: NEW, signing_secret_previous: OLD, signing_previous_until: now - 1, events: subscribeAll },
      }),
    });
    await client.ok('t_emit', { k, s: 'state', d: [stateEvent('unit:a/b')] });
    const frames = await rcv.waitFor(4);
    const rotating = frames.filter((r) => r.url.searchParams.has('rotating'));
    const rotated = frames.filter((r) => r.url.searchParams.has('rotated'));
    t.is(rotating.length, 2);
    t.is(rotated.length, 2);
    for (const r of rotating) t.deepEqual([verifies(NEW, r), verifies(OLD, r)], [true, true]);
    for (const r of rotated) t.deepEqual([verifies(NEW, r), verifies(OLD, r)], [true, false]);
  });
}
