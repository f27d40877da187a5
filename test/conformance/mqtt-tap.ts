import net from 'node:net';
import mqttPacket, { type Packet } from 'mqtt-packet';
import type { Owner } from '../helpers/broker';

/**
 * A TCP relay between MQTT clients and a broker that reads every packet
 * both ways (mqtt-packet's parser): what a client put in its CONNECT (will,
 * clean session), what it subscribed to, the flags of what it published,
 * and when it sent DISCONNECT or closed; the broker's deliveries to it too,
 * so an answer can be placed after what it answers. The TCK watches an edge
 * node the same way, from inside the broker (a HiveMQ extension).
 *
 * `held`: connections wait (accepted, not relayed) until `open()`, so what a
 * client does once connected starts when the test is ready for it.
 */
export interface Tapped {
  /** the connection, numbered from 1 in the order they came */
  conn: number;
  /** out: client to broker; in: broker to client; closed: the client's side ended */
  dir: 'out' | 'in' | 'closed';
  packet?: Packet;
  /** when the tap read it (performance.now(), ms): orders what two taps read */
  t?: number;
}

export interface MqttTap {
  host: string;
  port: number;
  readonly log: Tapped[];
  open(): void;
  /** resolves with what `find` returns once it is truthy over the log; rejects after `ms` with the log's last entries */
  until<T>(what: string, find: (log: Tapped[]) => T, ms?: number): Promise<NonNullable<T>>;
}

export async function startMqttTap(t: Owner, target: { host: string; port: number }, opts: { held?: boolean } = {}): Promise<MqttTap> {
  const log: Tapped[] = [];
  const waiters = new Set<() => void>();
  const note = (e: Tapped) => { log.push({ ...e, t: performance.now() }); for (const w of [...waiters]) w(); };
  let held = !!opts.held;
  const pending: (() => void)[] = [];
  const sockets = new Set<net.Socket>();
  let count = 0;
  const relay = (inbound: net.Socket) => {
    const conn = ++count;
    const outbound = net.connect(target.port, target.host);
    sockets.add(outbound);
    const up = mqttPacket.parser();
    const down = mqttPacket.parser();
    up.on('packet', (packet) => {
      // what follows a CONNECT, both ways, is in the version it asked for
      if (packet.cmd === 'connect') for (const p of [up, down]) (p as unknown as { settings: { protocolVersion?: number } }).settings.protocolVersion = packet.protocolVersion;
      note({ conn, dir: 'out', packet });
    });
    down.on('packet', (p) => note({ conn, dir: 'in', packet: p }));
    inbound.on('data', (d: Buffer) => { up.parse(d); outbound.write(d); });
    outbound.on('data', (d: Buffer) => { down.parse(d); inbound.write(d); });
    inbound.once('close', () => { note({ conn, dir: 'closed' }); outbound.destroy(); });
    outbound.once('close', () => inbound.destroy());
    inbound.once('error', () => inbound.destroy());
    outbound.once('error', () => outbound.destroy());
  };
  const server = net.createServer((inbound) => {
    sockets.add(inbound);
    inbound.pause();
    const go = () => { relay(inbound); inbound.resume(); };
    if (held) pending.push(go);
    else go();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return {
    host: '127.0.0.1',
    port: (server.address() as net.AddressInfo).port,
    log,
    open() {
      held = false;
      for (const go of pending.splice(0)) go();
    },
    async until<T>(what: string, find: (l: Tapped[]) => T, ms = 20_000): Promise<NonNullable<T>> {
      const deadline = Date.now() + ms;
      for (;;) {
        const v = find(log);
        if (v) return v as NonNullable<T>;
        const left = deadline - Date.now();
        if (left <= 0) {
          const last = log.slice(-12).map((e) => `${e.conn} ${e.dir} ${e.packet?.cmd ?? ''} ${(e.packet as any)?.topic ?? ''}`);
          throw new Error(`tap: timed out waiting for ${what}; last: ${last.join('; ')}`);
        }
        await new Promise<void>((resolve) => {
          const w = () => { clearTimeout(timer); waiters.delete(w); resolve(); };
          const timer = setTimeout(w, Math.min(left, 250));
          waiters.add(w);
        });
      }
    },
  };
}
