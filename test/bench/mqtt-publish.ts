import 'reflect-metadata';
import os from 'node:os';
import { startBroker } from '../helpers/broker';
import { table, fmt } from './lib';
import { Connection } from '../../plugins/notifiers/mqtt/connection';
import { messagesOf, type Message } from '../../plugins/notifiers/mqtt/messages';
import { readSettings } from '../../plugins/notifiers/mqtt/settings';
import { StateTopics } from '../../plugins/notifiers/mqtt/topics';
import type { NotifierConfig } from '../../plugins/notifiers/contract';
import type { ModuleLogger } from '../../core/log';

/**
 * The mqtt notifier's publishing, in process: CPU µs per QoS 0 state
 * message from the events of a batch to the socket (messagesOf, then
 * Connection.publishBatch: framed, one socket write per batch), beside the
 * same messages through the client library, one `publish` per message (what
 * publishBatch did before), and the same two ways at QoS 1 (framed: the connection's own ids and PUBACKs; with the
 * notifier's window of two batches, every acknowledgement awaited), over
 * MQTT 3.1.1 and 5, to mosquitto. Batches of 1 000 state events (3 000 messages: the JSON state,
 * status, value, retained, as the defaults publish them), BENCH_MQTT_N
 * events a round (default 60 000); the ways alternate over BENCH_ROUNDS
 * rounds (default 7) after a warm-up round; medians, spread beside.
 *
 *   node dist/test/bench/mqtt-publish.js
 */
const N = Number(process.env.BENCH_MQTT_N ?? 60_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const BATCH = 1000;
const quiet: ModuleLogger = { debug() {}, info() {}, warning() {}, error: (m) => console.error(m), critical: (m) => console.error(m), log() {} };
const self = { product: 'uc', system: 'bench' };

type Way = 'framed' | 'client' | 'framed1' | 'client1';

async function main(): Promise<void> {
  const cleanups: (() => unknown)[] = [];
  const owner = { teardown: (fn: () => unknown) => { cleanups.push(fn); } };
  try {
    const broker = await startBroker(owner, { kind: 'mosquitto', mosquittoConf: ['max_queued_messages 0'] });
    const rows: (string | number)[][] = [];
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const results: Record<string, number[]> = {};
    const conns: Record<string, { conn: Connection; messages: (i: number) => Message[] }> = {};
    for (const protocol of [4, 5] as const) {
      for (const qos of [0, 1] as const) {
        const s = readSettings({ id: `b${protocol}${qos}`, type: 'mqtt', events: [], host: broker.host, port: broker.port, space: `bench${protocol}`, qos, ...(protocol === 5 ? { protocol: '5' } : {}) } as unknown as NotifierConfig, os.tmpdir());
        const conn = new Connection(s, quiet, `bench-${protocol}-${qos}-${process.pid}`);
        conn.start();
        if (!(await conn.waitConnected(10_000))) throw new Error('no connection to mosquitto');
        cleanups.push(() => conn.stop());
        const topics = new StateTopics(s.prefix, 100_000);
        // a batch's events: 1 000 items (so 1 000 topics of each kind), a new value each
        const messages = (b: number) => messagesOf(s, topics, 'state', Array.from({ length: BATCH }, (_, i) => ({
          type: 'lvar', oid: `lvar:bench/v${i}`, full_id: `bench/v${i}`, status: 1, value: String(b * BATCH + i), t: Date.now() / 1000,
        })), self);
        conns[`${protocol}${qos}`] = { conn, messages };
      }
    }
    const run = async (protocol: 4 | 5, way: Way): Promise<number> => {
      const { conn, messages } = conns[`${protocol}${way.endsWith('1') ? 1 : 0}`];
      // what publishBatch did before for QoS 0, and still does for 1 and 2
      const viaClient = (conn as unknown as { throughClient(m: Message[]): Promise<{ acked: Promise<void> }> }).throughClient.bind(conn);
      let count = 0;
      const cpu0 = process.cpuUsage();
      let previous: Promise<void> = Promise.resolve();
      for (let b = 0; b < N / BATCH; b++) {
        const m = messages(b);
        count += m.length;
        const { acked } = way.startsWith('framed') ? await conn.publishBatch(m) : await viaClient(m);
        // QoS 1: the notifier's window of two batches
        await previous;
        previous = acked;
        // the socket written out between batches, as the host's queue yields
        await new Promise((r) => setImmediate(r));
      }
      await previous;
      const cpu = process.cpuUsage(cpu0);
      return (cpu.user + cpu.system) / count;
    };
    const ways: [4 | 5, Way][] = [[4, 'framed'], [4, 'client'], [5, 'framed'], [5, 'client'], [4, 'framed1'], [4, 'client1'], [5, 'framed1'], [5, 'client1']];
    for (let round = 0; round <= ROUNDS; round++) {
      for (const [protocol, way] of round % 2 ? ways : [...ways].reverse()) {
        const us = await run(protocol, way);
        process.stderr.write(`round ${round} MQTT ${protocol === 5 ? '5' : '3.1.1'} ${way}: ${us.toFixed(2)} µs/message\n`);
        if (round > 0) (results[`${protocol} ${way}`] ??= []).push(us);
      }
    }
    const label: Record<Way, string> = {
      framed: 'QoS 0, framed, one write a batch', client: 'QoS 0, one client publish a message (before)',
      framed1: 'QoS 1, framed, acknowledged by the connection', client1: 'QoS 1, one client publish a message (before)',
    };
    for (const [protocol, way] of ways) {
      const xs = results[`${protocol} ${way}`];
      rows.push([protocol === 5 ? '5' : '3.1.1', label[way], fmt(median(xs), 2), `${fmt(Math.min(...xs), 2)}–${fmt(Math.max(...xs), 2)}`]);
    }
    console.log(`mqtt notifier publishing in process, ${N} state events a round (${3 * N} messages), batches of ${BATCH} events\n`);
    console.log(table(['MQTT', 'publication', 'CPU µs/message (median)', 'spread'], rows));
    const r = (p: 4 | 5, w: Way) => median(results[`${p} ${w}`]);
    console.log(`\nMQTT 5 / 3.1.1, framed: ${(r(5, 'framed') / r(4, 'framed')).toFixed(2)}, QoS 1 framed: ${(r(5, 'framed1') / r(4, 'framed1')).toFixed(2)}; ${ROUNDS} alternating rounds after a warm-up; load average ${os.loadavg()[0].toFixed(1)}`);
  } finally {
    for (const fn of cleanups.reverse()) await fn();
  }
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
