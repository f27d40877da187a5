import test from 'ava';
import { Keys, startController } from '../helpers/controller';
import { Receiver } from '../helpers/receiver';
import { notifierFiles, stats } from '../helpers/notifiers';
import { until } from '../helpers/wait';

const k = Keys.master;

// the calls of a JSON RPC batch run one after the other through promises, in one turn of the event loop:
// a notifier's loop waits that turn out, so their events go in one send (they went one or a few per send)
test('the events of a JSON RPC batch of updates go out together: one request to an idle web hook, not one per update', async (t) => {
  const rcv = await Receiver.start(t);
  const { client, url } = await startController(t, {
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, durable: false, skip_test: true, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] } }),
  });
  await client.ok('create', { k, i: 'sensor:turn/s' });
  const before = (await stats(client, k, 'hook')).sent;
  const n = 50;
  const body = JSON.stringify(Array.from({ length: n }, (_, j) => ({ jsonrpc: '2.0', method: 'update', id: j, params: { k, i: 'sensor:turn/s', s: 1, v: `v${j}` } })));
  const answers = await (await fetch(`${url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body })).json() as { error?: unknown }[];
  t.false(answers.some((a) => a.error), JSON.stringify(answers.find((a) => a.error)));
  await until('all sent', async () => (await stats(client, k, 'hook')).sent === before + n);
  const batches = rcv.requests.filter((r) => r.json?.subject === 'state' && r.json.data.some((e: { value?: string }) => e.value?.startsWith('v')));
  t.is(batches.length, 1, `requests: ${batches.map((r) => r.json.data.length).join(', ')}`);
  t.deepEqual(batches[0].json.data.map((e: { value: string }) => e.value), Array.from({ length: n }, (_, j) => `v${j}`));
});
