import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { Keys, makeDir, startController } from '../helpers/controller';
import { Receiver } from '../helpers/receiver';
import { notifierFiles, stateEvent, stats } from '../helpers/notifiers';
import { until } from '../helpers/wait';

const k = Keys.master;
const states = [{ subject: 'state', types: ['#'], groups: ['#'] }];

test('the log says "retrying" only for a frame that is tried again: not for one refused for good and moved to the dead letters', async (t) => {
  const refusing = await Receiver.start(t);
  refusing.answer = () => ({ status: 400, body: 'no such sensor here' });
  const busy = await Receiver.start(t);
  busy.answer = () => (busy.requests.length === 1 ? { status: 503, body: 'busy' } : { body: '{"result":"OK"}' });
  const hook = { type: 'json', skip_test: true, retries: 2, retry_delay: 0.01, events: states };
  const dir = makeDir(t, { files: notifierFiles({ refused: { ...hook, uri: refusing.uri }, later: { ...hook, uri: busy.uri } }) });
  const { client } = await startController(t, { dir });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/x')] });
  await until('refused buried', async () => ((await stats(client, k, 'refused')).outbox as Record<string, number>).dead_letters === 1);
  await until('delivered later', async () => (await stats(client, k, 'later')).sent === 1);
  const log = path.join(dir, 'controller.log');
  const lines = await until('the log lines', () => {
    const text = fs.readFileSync(log, 'utf8').split('\n');
    const of = (id: string) => text.filter((l) => l.includes(`notifier ${id}: `));
    return of('refused').some((l) => l.includes('dead letters')) && of('later').length ? { refused: of('refused'), later: of('later') } : undefined;
  });
  t.is(refusing.requests.length, 1, 'a 400 is not tried again');
  t.is(lines.refused.length, 2, lines.refused.join('\n'));
  t.regex(lines.refused[0], /notifier refused: delivery failed: .*HTTP 400: no such sensor here; not retried$/);
  t.regex(lines.refused[1], /notifier refused: 1 state event\(s\) moved to the dead letters after 1 tries: /);
  t.false(lines.refused.some((l) => l.includes('retrying')));
  // a frame that is tried again says so
  t.regex(lines.later[0], /notifier later: delivery failed: .*HTTP 503: busy; retrying$/);
});
