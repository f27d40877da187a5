import net from 'node:net';
import type { Broker, Owner } from './broker';
import { switchableServer } from './switchable-server';

/**
 * An aedes broker in this process that can hold back the publications of
 * some clients (`close`): they are taken off the socket but neither passed
 * on nor acknowledged until `open`, so a client publishing at QoS 1 waits
 * for its PUBACK as long as the gate is closed. What the other clients
 * publish goes on meanwhile.
 */
export interface GatedBroker extends Broker {
  /**
   * hold the publications of clients whose id starts with `prefix`; `after`:
   * let that many of theirs through first (a drain cut in its middle)
   */
  close(prefix: string, after?: number): void;
  /** let the held ones through, and every one from now on */
  open(): void;
  /** publications held now */
  readonly held: number;
}

export async function startGatedBroker(t: Owner): Promise<GatedBroker> {
  const { Aedes } = await import('aedes');
  let prefix: string | undefined;
  let pass = 0;
  let held: (() => void)[] = [];
  const aedes = await Aedes.createBroker({
    authorizePublish: (client, _packet, done) => {
      if (prefix !== undefined && client?.id.startsWith(prefix) && pass-- <= 0) held.push(() => done(null));
      else done(null);
    },
  });
  const server = switchableServer(() => net.createServer((s) => aedes.handle(s)));
  await server.listen();
  t.teardown(async () => {
    await server.stop();
    await new Promise<void>((r) => aedes.close(() => r()));
  });
  return {
    kind: 'aedes',
    host: '127.0.0.1',
    get port() { return server.port; },
    stop: () => server.stop(),
    start: () => server.listen(),
    close(p, after = 0) { prefix = p; pass = after; },
    open() {
      prefix = undefined;
      const go = held;
      held = [];
      for (const f of go) f();
    },
    get held() { return held.length; },
  };
}
