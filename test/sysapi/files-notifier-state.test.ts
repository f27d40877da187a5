import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { Keys, startController } from '../helpers/controller';
import { Err, failsBoth } from '../helpers/api-errors';
import { Receiver } from '../helpers/receiver';
import { notifierFiles, stateEvent } from '../helpers/notifiers';
import { until } from '../helpers/wait';

const k = Keys.master;
const states = [{ subject: 'state', types: ['#'], groups: ['#'] }];

test("the notifiers' state files (outbox journal, dead letters, Sparkplug bdSeq) cannot be read, written, chmodded or deleted through the file functions; a forged dead letter cannot be planted", async (t) => {
  const rcv = await Receiver.start(t);
  rcv.answer = (r) => (r.body.includes('sensor:g/bad') ? { status: 400, body: 'refused' } : { body: '{"result":"OK"}' });
  const { client, dir } = await startController(t, {
    ini: { sysapi: { file_management: 'yes' } },
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, signing_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', events: states } }),
  });
  const rt = path.join(dir, 'runtime');
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/bad', 1, 'genuine')] });
  const dead = 'outbox/hook.dead.json';
  await until('a dead letter on disk', () => fs.existsSync(path.join(rt, dead)) && fs.readFileSync(path.join(rt, dead), 'utf8').includes('genuine'));
  const journal = fs.readdirSync(path.join(rt, 'outbox')).find((f) => f.startsWith('hook.journal.'))!;
  t.truthy(journal);
  // the name a Sparkplug node keeps its bdSeq under (plugins/notifiers/sparkplug/node.ts)
  fs.writeFileSync(path.join(rt, 'uc_sparkplug_sp.bdseq'), '7');
  fs.symlinkSync('outbox', path.join(rt, 'ob'));
  const files = [dead, `outbox/${journal}`, 'uc_sparkplug_sp.bdseq', 'ob/hook.dead.json'];
  const before = new Map(files.map((f) => [f, fs.readFileSync(path.join(rt, f))]));

  for (const i of files) {
    await failsBoth(t, client, 'file_get', { k, i }, Err.denied);
    await failsBoth(t, client, 'file_set_exec', { k, i, e: true }, Err.denied);
    await failsBoth(t, client, 'file_unlink', { k, i }, Err.denied);
  }
  // a forged letter: over the real one, beside it, through the link, and as a new notifier's
  const forged = JSON.stringify({ letters: [{ id: 'msg_forged_1_1', t: Date.now(), subject: 'state', events: [stateEvent('sensor:g/forged', 1, 'forged')], size: 10, status: 400, error: 'x' }] });
  for (const i of [...files, 'outbox/other.dead.json', 'ob/other.dead.json', 'outbox/sub/x.txt']) {
    await failsBoth(t, client, 'file_put', { k, i, m: forged }, Err.denied);
  }
  for (const [f, data] of before) {
    const now = fs.readFileSync(path.join(rt, f));
    if (f.startsWith('outbox/hook.journal.')) {
      // the outbox itself may still append (the dead letter's own record, late on a loaded machine): what was there stays, nothing forged comes
      t.deepEqual(now.subarray(0, data.length), data, `${f} kept what it held`);
      t.false(now.includes('forged'), `${f} holds nothing forged`);
    } else t.deepEqual(now, data, `${f} unchanged`);
  }
  t.false(fs.existsSync(path.join(rt, 'outbox', 'other.dead.json')));
  t.false(fs.existsSync(path.join(rt, 'outbox', 'sub')), 'no folder made in outbox/ just to be refused');

  // what a replay sends is the genuine letter only
  rcv.answer = () => ({ body: '{"result":"OK"}' });
  t.deepEqual(await client.ok('replay_dead_letters', { k, i: 'hook', s: 0 }), { letters: 1, events: 1 });
  await until('replayed', () => rcv.requests.length === 2);
  t.true(rcv.requests[1].body.includes('genuine'));
  t.false(rcv.requests.some((r) => r.body.includes('forged')));
});

test('with no outbox yet, file_put cannot make the outbox folder nor a dead letter in it', async (t) => {
  const { client, dir } = await startController(t, { ini: { sysapi: { file_management: 'yes' } } });
  const rt = path.join(dir, 'runtime');
  t.false(fs.existsSync(path.join(rt, 'outbox')));
  await failsBoth(t, client, 'file_put', { k, i: 'outbox/hook.dead.json', m: '{"letters":[]}' }, Err.denied);
  await failsBoth(t, client, 'file_put', { k, i: 'uc_sparkplug_sp.bdseq', m: '1' }, Err.denied);
  // the stream's numbering (plugins/stream/seq.ts): an older epoch written back would reuse numbers
  await failsBoth(t, client, 'file_put', { k, i: 'uc_stream_epoch.json', m: '1' }, Err.denied);
  await failsBoth(t, client, 'file_get', { k, i: 'uc_stream_epoch.json' }, Err.denied);
  t.false(fs.existsSync(path.join(rt, 'outbox')));
  t.false(fs.existsSync(path.join(rt, 'uc_sparkplug_sp.bdseq')));
  // other files of runtime/ stay the operator's
  await client.ok('file_put', { k, i: 'outboxes/notes.txt', m: 'mine' });
  await client.ok('file_put', { k, i: 'uc_notes.txt', m: 'mine' });
  t.is((await client.ok('file_get', { k, i: 'outboxes/notes.txt' })).data, 'mine');
});
