import test from 'ava';
import { Keys, startController } from '../helpers/controller';
import { Receiver } from '../helpers/receiver';
import { notifierFiles, stats } from '../helpers/notifiers';
import { until } from '../helpers/wait';

const k = Keys.master;

test('item updates and unit actions reach a json notifier as state and action events', async (t) => {
  const rcv = await Receiver.start(t);
  const { client } = await startController(t, {
    files: notifierFiles({
      hook: {
        type: 'json', uri: rcv.uri, skip_test: true, events: [
          { subject: 'state', types: ['sensor'], groups: ['env/#'] },
          { subject: 'action', items: ['unit:plant/pump'], action_status: ['completed'] },
        ],
      },
    }),
  });
  for (const i of ['sensor:env/temp', 'sensor:other/x', 'unit:plant/pump']) await client.ok('create', { k, i });
  await client.ok('update', { k, i: 'sensor:env/temp', s: 1, v: '22.5' });
  await client.ok('update', { k, i: 'sensor:other/x', s: 1, v: '1' });
  await client.ok('action', { k, i: 'unit:plant/pump', s: 1, w: 5 });
  const done = (e: any) => e.status === 'completed';
  await until('action event', () => rcv.requests.some((r) => r.json.subject === 'action' && r.json.data.some(done)), 15_000);
  await until('queue empty', async () => (await stats(client, k, 'hook')).queued === 0, 15_000);
  const states = rcv.requests.filter((r) => r.json.subject === 'state').flatMap((r) => r.json.data);
  t.true(states.every((e: any) => e.oid === 'sensor:env/temp'));
  t.like(states[states.length - 1], { oid: 'sensor:env/temp', status: 1, value: '22.5' });
  const actions = rcv.requests.filter((r) => r.json.subject === 'action').flatMap((r) => r.json.data);
  t.deepEqual(actions.map((a: any) => [a.item_oid, a.status]), [['unit:plant/pump', 'completed']]);
});
