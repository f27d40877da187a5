import crypto from 'node:crypto';
import type { Paths } from '../../../core/paths';
import { withDeadline } from '../../../core/toolkit/deadline';
import type { NotifierConfig, NotifierType } from '../contract';
import { endpointFactory } from '../host/settings';
import { brokersText, Connection } from '../mqtt/contract';
import { readSparkplug } from '../sparkplug/settings';
import { standaloneContext } from './notifier-env';

/**
 * The command line's own endpoint test, when no running controller tested
 * the notifier: the type's endpoint test, but for a type whose endpoint is an
 * identity others follow. A Sparkplug edge node's test would connect as the
 * node (its NDEATH will, the next bdSeq) and be born: a host would take it
 * for the controller's node, and the bdSeq of the controller's next birth
 * would move. There the broker connection alone is tested, as another
 * client, publishing nothing. Resolves with what was tested when that is not
 * the type's own test; rejects with the reason the test failed.
 */
export async function testHere(paths: Paths, cfg: NotifierConfig, type: NotifierType): Promise<string | undefined> {
  const env = standaloneContext(paths);
  // the same clock as the controller's: the notifier's timeout, for the test and for the stop after it
  const timeout = cfg.timeout ?? env.ctx.config.server.timeout;
  try {
    if (type.name === 'sparkplug') {
      const s = readSparkplug(cfg, paths.dir, env.ctx.config.server.name);
      const conn = new Connection(s.mqtt, env.ctx.quietLog(`notifier.${cfg.id}`), `${paths.product}-notifier-test-${crypto.randomBytes(4).toString('hex')}`);
      try {
        await withDeadline(timeout, (signal) => reachBroker(conn, brokersText(s.mqtt), signal));
      } finally {
        await conn.stop();
      }
      return `the broker connection only, nothing published as edge node ${s.groupId}/${s.edgeNodeId}`;
    }
    // only the endpoint is tested: nothing of a running controller (API over MQTT, log collection) is started here
    cfg.api_enabled = false;
    cfg.collect_logs = false;
    const endpoint = endpointFactory(type, env.ctx).create(cfg, { ctx: env.ctx, log: env.ctx.quietLog(`notifier.${cfg.id}`) });
    try {
      await withDeadline(timeout, (signal) => endpoint.test(signal));
    } finally {
      await withDeadline(timeout, async () => endpoint.stop()).catch(() => undefined);
    }
    return undefined;
  } finally {
    await env.close();
  }
}

/** Connected, or the reason it is not when the deadline ends the wait. */
async function reachBroker(conn: Connection, broker: string, signal: AbortSignal): Promise<void> {
  const gaveUp = new Promise<boolean>((resolve) => {
    if (signal.aborted) resolve(false);
    else signal.addEventListener('abort', () => resolve(false), { once: true });
  });
  conn.start();
  if (!(await Promise.race([conn.waitConnected(), gaveUp]))) {
    throw new Error(`cannot connect to ${broker}${conn.error ? `: ${conn.error}` : ''}`);
  }
}
