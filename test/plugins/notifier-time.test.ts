import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { Keys, startController } from '../helpers/controller';
import { notifierFiles, stateEvent, stats, subscribeAll } from '../helpers/notifiers';
import { until } from '../helpers/wait';

const k = Keys.master;

/**
 * A notifier type whose calls never return, whatever the signal says: send,
 * test and stop hang. It counts what it was given in info(), and each stop
 * call as a line of runtime/<id>.stops (the count must survive the stop).
 */
const HANG_TYPE = `
const fs = require('node:fs');
const path = require('node:path');
module.exports.plugin = {
  name: 'notifier-hang', kind: 'notifier', version: '1.0.0', needs: ['notifiers'],
  notifier: {
    name: 'hang',
    settings: {},
    create(cfg, env) {
      const seen = { sends: 0, aborted: 0, tests: 0 };
      const never = (signal) => {
        signal.addEventListener('abort', () => { seen.aborted++; });
        return new Promise(() => {});
      };
      return {
        send(subject, events, signal) { seen.sends++; return never(signal); },
        test(signal) { seen.tests++; return never(signal); },
        stop() {
          fs.appendFileSync(path.join(env.ctx.paths.runtime, cfg.id + '.stops'), 'stop\\n');
          return new Promise(() => {});
        },
        info: () => seen,
      };
    },
  },
};
`;

test('a send that never returns counts as failed at the timeout and is retried by the host; the test fails at it', async (t) => {
  const files = notifierFiles({
    stuck: { type: 'hang', timeout: 0.5, retries: 2, retry_delay: 0.1, retry_max_delay: 0.1, events: subscribeAll },
  });
  files['plugins/hang-notifier.js'] = HANG_TYPE;
  const { client } = await startController(t, { files });
  await client.ok('t_emit', { k, s: 'state', d: [1, 2, 3, 4, 5].map((i) => stateEvent(`sensor:g/s${i}`, 1, String(i))) });
  // 1 try + 2 retries, each cut at 0.5 s: the batch is dropped then, the queue is empty
  const s = await until('batch dropped', async () => { const s = await stats(client, k, 'stuck'); return s.dropped === 5 && s; }, 20_000);
  t.like(s, { queued: 0, sent: 0, failed: 3, dropped: 5, sends: 3, test: 'failed', tests: 1 });
  // every call was told through its signal (test + 3 sends)
  t.is(s.aborted, 4);
});

test('stop calls each endpoint stop exactly once, within stop_drain, even when it never returns', async (t) => {
  const files = notifierFiles({
    one: { type: 'hang', stop_drain: 1, skip_test: true, events: subscribeAll },
    two: { type: 'hang', stop_drain: 1, skip_test: true, events: subscribeAll },
  });
  files['plugins/hang-notifier.js'] = HANG_TYPE;
  // the kernel would wait 60 s for a plugin's stop: the host's own limit must be what ends it
  const { client, dir, stop } = await startController(t, { files, ini: { server: { plugin_stop_timeout: 60 } } });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/a', 1, '1')] });
  await until('send under way', async () => (await stats(client, k, 'one')).sends > 0, 10_000);
  const began = Date.now();
  await stop();
  const took = (Date.now() - began) / 1000;
  // stop_drain is 1 s; the margin is for a shared machine, far below the kernel's 60 s
  t.true(took < 20, `stop took ${took} s`);
  for (const id of ['one', 'two']) t.is(fs.readFileSync(path.join(dir, 'runtime', `${id}.stops`), 'utf8'), 'stop\n', id);
});
