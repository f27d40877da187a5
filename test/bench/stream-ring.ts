import 'reflect-metadata';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EventRing } from '../../plugins/stream/ring';
import { SeqSource } from '../../plugins/stream/seq';
import { StreamSettings } from '../../plugins/stream';
import type { ModuleLogger } from '../../core/log';
import { table, fmt } from './lib';

/**
 * What the stream's ring costs per event, in process (CPU µs by
 * process.cpuUsage):
 *
 *   node dist/test/bench/stream-ring.js
 *
 * - before: the frame as the stream made it before seq and the ring (one
 *   JSON.stringify per event, only when some client wanted it);
 * - numbered and kept: the seq, the frame with it and the push into a ring
 *   at its default bounds, full (every push drops the oldest): what every
 *   event now costs, with or without clients;
 * - replayed: reading one kept event back and parsing it for the filters
 *   (per event sent to a resuming client).
 * BENCH_RING_N events per run (default 1,000,000), 5 runs, the median.
 */
const N = Number(process.env.BENCH_RING_N ?? 1_000_000);
const RUNS = 5;

/** A state event as the items service sends it (a sensor's). */
const event = (i: number) => ({
  oid: 'sensor:bench/s', type: 'sensor', group: 'bench', id: 's', full_id: 'bench/s',
  status: 1, value: String(20 + (i % 100) / 10), t: 1795932706.261 + i / 1000, ieid: [1, i],
});

const cpu = (run: () => void): number => {
  const a = process.cpuUsage();
  run();
  const b = process.cpuUsage(a);
  return (b.user + b.system) / N;
};
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ring-bench-'));
const quiet = { error: () => {} } as unknown as ModuleLogger;
const seqs = new SeqSource(path.join(dir, 'uc_stream_epoch.json'), quiet);
const events = StreamSettings.ws_replay_events.default;
const bytes = StreamSettings.ws_replay_bytes.default;
const ring = new EventRing(events, bytes, seqs.last);
// full before measuring: every push below also drops one
for (let i = 0; i < events; i++) ring.push('state', JSON.stringify({ s: 'state', d: [event(i)], seq: seqs.next() }));

const rows: { before: number[]; kept: number[]; replayed: number[] } = { before: [], kept: [], replayed: [] };
let sink = 0;
for (let r = 0; r < RUNS; r++) {
  rows.before.push(cpu(() => {
    for (let i = 0; i < N; i++) sink += JSON.stringify({ s: 'state', d: [event(i)] }).length;
  }));
  rows.kept.push(cpu(() => {
    for (let i = 0; i < N; i++) ring.push('state', JSON.stringify({ s: 'state', d: [event(i)], seq: seqs.next() }));
  }));
  rows.replayed.push(cpu(() => {
    const from = ring.floor + 1;
    for (let i = 0; i < N; i++) {
      const e = ring.at(from + (i % ring.count))!;
      sink += (JSON.parse(e.text) as { d: unknown[] }).d.length;
    }
  }));
}
fs.rmSync(dir, { recursive: true, force: true });
const before = median(rows.before);
const kept = median(rows.kept);
console.log(table(['per event (CPU µs, median of 5 runs of ' + N + ')', 'µs'], [
  ['before: the frame, when a client wanted it', fmt(before, 2)],
  ['now: seq, the frame and the ring (every event)', fmt(kept, 2)],
  ['the ring\'s share (seq, push, drop of the oldest)', fmt(kept - before, 2)],
  ['replayed: read back and parsed for the filters', fmt(median(rows.replayed), 2)],
]));
// sink: read, so the loops' work cannot be dropped as unused
console.log(`ring: ${ring.count} events, ${ring.bytes} bytes (bounds ${events} events, ${bytes} bytes); checksum ${sink}`);
