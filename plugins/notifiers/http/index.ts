import { notifierPlugin } from '../type-plugin';
import { frameHead, webhookType } from '../webhook';
import { bool } from '../../../core/schema';

/** A query string value: text as it is, other scalars as text, objects as JSON; null and absent are left out. */
function queryValue(v: unknown): string | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** One GET query: k, s (subject), space, then the event's own fields (never overriding those); a `server` event as `data`. */
function query(head: Record<string, string>, event: unknown): Record<string, string> {
  const q: Record<string, string> = {};
  if (typeof event === 'string') q.data = event;
  if (event && typeof event === 'object') {
    for (const [k, v] of Object.entries(event)) {
      const s = queryValue(v);
      if (s !== undefined) q[k] = s;
    }
  }
  return { ...q, ...head };
}

/** http web hook (deprecated type): GET with one event per request; stop_on_error ends a batch at its first failure. */
export const httpType = webhookType({
  name: 'http',
  description: 'one GET per event, the event fields in the query (k, s, space); deprecated',
  settings: { stop_on_error: bool(false, 'end a batch at its first failed request') },
  encode: (cfg, subject, events) =>
    events.map((e) => ({ request: { method: 'GET', query: query(frameHead(cfg, subject, 's'), e) }, events: [e] })),
  encodeTest: (cfg) => ({ method: 'GET', query: frameHead(cfg, 'test', 's') }),
});

export const plugin = notifierPlugin('notifier-http', httpType);
