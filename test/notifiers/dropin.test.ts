import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { Keys, startController } from '../helpers/controller';
import { notifierFiles, stateEvent, stats, subscribeAll } from '../helpers/notifiers';
import { until } from '../helpers/wait';

const k = Keys.master;

/** A notifier type as a plain .js drop-in: appends each event as a JSON line to a file. */
const JSONL_TYPE = `
const fs = require('node:fs');
const path = require('node:path');
const type = {
  name: 'jsonl',
  settings: { file: { type: 'string', required: true, description: 'file name under runtime/' } },
  target: (cfg) => cfg.file,
  validate(cfg) { if (typeof cfg.file !== 'string' || cfg.file.includes('/')) throw new Error('file must be a plain name'); },
  create(cfg, env) {
    const file = path.join(env.ctx.paths.runtime, cfg.file);
    let lines = 0;
    return {
      async test(signal) { fs.appendFileSync(file, JSON.stringify({ subject: 'test' }) + '\\n'); },
      async send(subject, events, signal) {
        for (const e of events) fs.appendFileSync(file, JSON.stringify({ subject, space: cfg.space, e }) + '\\n');
        lines += events.length;
      },
      info: () => ({ lines }),
      stop() {},
    };
  },
};
module.exports.plugin = {
  name: 'notifier-jsonl', kind: 'notifier', version: '1.0.0', needs: ['notifiers'], notifier: type,
};
`;

test('a drop-in .js notifier type in the controller plugins/ folder works like a built-in one', async (t) => {
  const files = notifierFiles({
    lines: { type: 'jsonl', file: 'events.jsonl', space: 'dropin', events: subscribeAll },
    refused: { type: 'jsonl', file: '../escape' },
  });
  files['plugins/jsonl-notifier.js'] = JSONL_TYPE;
  const { client, dir } = await startController(t, { files });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/a', 1, '7'), stateEvent('sensor:g/b', 2)] });
  const s = await until('lines sent 2', async () => { const s = await stats(client, k, 'lines'); return s.sent === 2 && s; });
  t.like(s, { lines: 2, queued: 0, test: 'passed' });
  const out = fs.readFileSync(path.join(dir, 'runtime', 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  t.deepEqual(out.map((l) => [l.subject, l.e?.oid]), [['test', undefined], ['state', 'sensor:g/a'], ['state', 'sensor:g/b']]);
  t.is(out[1].space, 'dropin');
  t.like(await client.ok('get_notifier', { k, i: 'lines' }), { type: 'jsonl', file: 'events.jsonl' });
  t.regex((await client.ok('get_notifier', { k, i: 'refused' })).problem, /file must be a plain name/);
});

/** A type that records the size of each batch it is given, with maxBatch 3. */
const BATCHES_TYPE = `
const type = {
  name: 'batches', maxBatch: 3, settings: {},
  create() {
    const sizes = [];
    return { async test() {}, async send(subject, events) { sizes.push(events.length); }, info: () => ({ sizes }), stop() {} };
  },
};
module.exports.plugin = {
  name: 'notifier-batches', kind: 'notifier', version: '1.0.0', needs: ['notifiers'], notifier: type,
};
`;

test("a type's maxBatch bounds its batches unless the notifier's config sets max_batch", async (t) => {
  const files = notifierFiles({
    typed: { type: 'batches', events: subscribeAll },
    own: { type: 'batches', max_batch: 5, events: subscribeAll },
  });
  files['plugins/batches-notifier.js'] = BATCHES_TYPE;
  const { client } = await startController(t, { files });
  const events = Array.from({ length: 10 }, (_, i) => stateEvent(`sensor:g/s${i}`, 1, String(i)));
  await client.ok('t_emit', { k, s: 'state', d: events });
  for (const [id, max] of [['typed', 3], ['own', 5]] as const) {
    const s = await until('id sent 10', async () => { const s = await stats(client, k, id); return s.sent === 10 && s; });
    t.is(s.sizes.reduce((a: number, b: number) => a + b, 0), 10, id);
    t.true(s.sizes.every((n: number) => n <= max), `${id}: ${s.sizes}`);
    t.true(s.sizes.length >= Math.ceil(10 / max), `${id}: ${s.sizes}`);
  }
});

/** A type with state per controller: `forController` and no `create`; its factory numbers the endpoints it creates. */
const COUNTED_TYPE = `
const type = {
  name: 'counted', settings: {},
  forController(ctx) {
    const made = [];
    let saves = 0;
    ctx.onSave(() => { saves++; });
    return {
      create(cfg, env) {
        made.push(cfg.id);
        const number = made.length;
        return {
          async test() {}, async send() {}, stop() {},
          info: () => ({ number, made: [...made], saves, owner: ctx.name, same: env.ctx === ctx }),
        };
      },
    };
  },
};
module.exports.plugin = {
  name: 'notifier-counted', kind: 'notifier', version: '1.0.0', needs: ['notifiers'], notifier: type,
};
`;

test('a type with forController gets one factory per controller, with its plugin context, which creates that controller\'s endpoints', async (t) => {
  const one = notifierFiles({ c1: { type: 'counted' }, c2: { type: 'counted' } });
  one['plugins/counted-notifier.js'] = COUNTED_TYPE;
  const two = notifierFiles({ c3: { type: 'counted' } });
  two['plugins/counted-notifier.js'] = COUNTED_TYPE;
  const [a, b] = await Promise.all([startController(t, { files: one }), startController(t, { files: two })]);
  const s1 = await stats(a.client, k, 'c1');
  const s2 = await stats(a.client, k, 'c2');
  const s3 = await stats(b.client, k, 'c3');
  t.deepEqual([s1.number, s2.number], [1, 2]);
  t.deepEqual(s1.made, ['c1', 'c2']);
  t.like(s3, { number: 1, made: ['c3'], owner: 'notifier-counted', same: true });
  // what the factory registers through ctx is the type plugin's: save runs it
  await a.client.ok('save', { k });
  t.is((await stats(a.client, k, 'c1')).saves, 1);
  t.is((await stats(b.client, k, 'c3')).saves, 0);
});
