import test, { type ExecutionContext } from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SeqSource, EPOCH_SPAN, epochOf } from '../../plugins/stream/seq';
import type { ModuleLogger } from '../../core/log';

const tmp = (t: ExecutionContext) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'seq-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, 'uc_stream_epoch.json');
};
const logs = () => {
  const errors: string[] = [];
  return { errors, log: { error: (m: string) => errors.push(m) } as unknown as ModuleLogger };
};
const stored = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')).epoch as number;
const CLOCK_ORIGIN = Date.UTC(2026, 0, 1);

test('past 2^22 events the next epoch is claimed on disk and the numbers go on, consecutive; the next run starts past it', (t) => {
  const file = tmp(t);
  const { log } = logs();
  const a = new SeqSource(file, log);
  const e = a.current;
  t.is(stored(file), e);
  let prev = a.next();
  t.is(prev, e * EPOCH_SPAN + 1);
  for (let i = 1; i < EPOCH_SPAN; i++) {
    const n = a.next();
    if (n !== prev + 1) t.fail(`${n} after ${prev}`);
    prev = n;
  }
  t.is(epochOf(prev), e + 1, 'the 2^22-th event is the first of the next epoch');
  t.is(a.current, e + 1);
  t.is(stored(file), e + 1, 'claimed on disk before it was given');
  const b = new SeqSource(file, log);
  t.true(b.next() > prev);
});

test('the epoch: one past the file\'s, never less than the clock\'s seconds; a broken file is moved aside', (t) => {
  const file = tmp(t);
  const { log, errors } = logs();
  const now = CLOCK_ORIGIN + 1000 * 1000; // 1000 s after the clock's origin
  t.is(new SeqSource(file, log, now).current, 1000, 'no file: the clock');
  t.is(new SeqSource(file, log, now).current, 1001, 'the same second: one past the file');
  t.is(new SeqSource(file, log, CLOCK_ORIGIN - 5000).current, 1002, 'a clock set back: one past the file');
  for (const broken of ['garbage', '{"epoch":-1}', '{"epoch":1.5}', '{"epoch":"7"}', `{"epoch":${2 ** 31}}`, '']) {
    fs.writeFileSync(file, broken);
    t.is(new SeqSource(file, log, now + 5000).current, 1005, `${JSON.stringify(broken)}: the clock's`);
  }
  t.is(errors.length, 6);
  t.is(fs.readdirSync(path.dirname(file)).filter((f) => f.startsWith('uc_stream_epoch.json.broken-')).length >= 1, true);
  // a file that cannot be written (here /proc refuses it): logged, and the numbers still come by the clock
  const nowhere = new SeqSource('/proc/self/uc_stream_epoch.json', log, now);
  t.is(nowhere.current, 1000);
  t.is(nowhere.next(), 1000 * EPOCH_SPAN + 1);
  t.regex(errors[errors.length - 1], /^stream epoch 1000 not written to \/proc\/self\/uc_stream_epoch.json: /);
});
