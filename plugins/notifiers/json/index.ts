import crypto from 'node:crypto';
import type { NotifierConfig, Subject } from '../contract';
import { notifierPlugin } from '../type-plugin';
import { answerIsSuccess, frameHead, webhookType, type HookChunk, type HookRequest } from '../webhook';
import { text } from '../../../core/schema';

/** The frames of EVA ICS 3.3's http-json `method`: absent the default {…, data: [events]}. */
export const JsonMethods = ['jsonrpc', 'list'] as const;
type JsonMethod = (typeof JsonMethods)[number] | undefined;

const methodOf = (cfg: NotifierConfig): JsonMethod => (cfg.method === 'jsonrpc' || cfg.method === 'list' ? cfg.method : undefined);

const post = (frame: unknown, accepts?: HookRequest['accepts']): HookRequest =>
  ({ method: 'POST', contentType: 'application/json', body: JSON.stringify(frame), accepts });

/** 3.3 took any 2xx answer to JSON RPC notifications (a receiver owes none) as delivered. */
const anyOk = (status: number) => status >= 200 && status <= 299;

/** One event as a JSON RPC 2.0 notification: method "jsonrpc", params the frame head with `data` the event (3.3). */
const notification = (head: Record<string, string>, event: unknown) => ({ jsonrpc: '2.0', method: 'jsonrpc', params: { ...head, data: event } });

/** One event in the list form: the frame head with the event's own fields (3.3); a server event (text) as `data`. */
const listed = (head: Record<string, string>, event: unknown) =>
  (event && typeof event === 'object' && !Array.isArray(event) ? { ...head, ...event } : { ...head, data: event });

function encode(cfg: NotifierConfig, subject: Subject, events: unknown[]): HookChunk[] {
  const head = frameHead(cfg, subject);
  switch (methodOf(cfg)) {
    case 'jsonrpc': {
      // one event: a notification; several: a batch of them
      const frame = events.length === 1 ? notification(head, events[0]) : events.map((e) => notification(head, e));
      return [{ request: post(frame, anyOk), events }];
    }
    case 'list':
      return [{ request: post(events.map((e) => listed(head, e))), events }];
    default:
      return [{ request: post({ ...head, data: events }), events }];
  }
}

/** The test: subject `test`; jsonrpc as a request with an id, whose result (or an empty / 202 answer) is success. */
function encodeTest(cfg: NotifierConfig): HookRequest {
  const head = frameHead(cfg, 'test');
  switch (methodOf(cfg)) {
    case 'jsonrpc': {
      const id = crypto.randomUUID();
      return post({ jsonrpc: '2.0', method: 'jsonrpc', params: head, id }, (status, body) => {
        if (!anyOk(status)) return false;
        if (status === 202 || body.trim() === '') return true;
        try {
          const a = JSON.parse(body) as Record<string, unknown> | null;
          return !!a && typeof a === 'object' && a.jsonrpc === '2.0' && a.id === id && !('error' in a);
        } catch {
          return false;
        }
      });
    }
    case 'list':
      return post([head], answerIsSuccess);
    default:
      return post(head);
  }
}

/**
 * CLI `create ID json:PROPS`, as 3.3's: `http[s]://[KEY@]host[:port]/path[#METHOD]`,
 * the notify key in the user part (not basic authorization), the method in
 * the fragment.
 */
export function parseJsonProps(props: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let uri = props;
  const hash = uri.indexOf('#');
  if (hash >= 0) {
    out.method = uri.slice(hash + 1);
    uri = uri.slice(0, hash);
    if (!JsonMethods.includes(out.method as (typeof JsonMethods)[number])) throw new Error(`bad json props: method (after #) must be ${JsonMethods.join(' or ')}`);
  }
  const m = /^([a-z][a-z0-9+.-]*:\/\/)([^/?]*)(.*)$/i.exec(uri);
  if (m && m[2].includes('@')) {
    const at = m[2].lastIndexOf('@');
    const key = m[2].slice(0, at);
    if (!key) throw new Error('bad json props: empty notify key before @');
    // the key is never shown in a message: it is a secret
    out.notify_key = decodeURIComponent(key);
    uri = m[1] + m[2].slice(at + 1) + m[3];
  }
  out.uri = uri;
  return out;
}

/** json web hook: POST {k, subject, space, data: [events]} (or 3.3's `method` jsonrpc / list frames), a batch of one subject per request. */
export const jsonType = webhookType({
  name: 'json',
  aliases: ['http-json'],
  description: 'POSTs each batch as JSON {k, subject, space, data: [events]}, or as JSON RPC 2.0 notifications (method jsonrpc), or a list of events with k, subject, space in each (method list)',
  settings: {
    method: text('the frame: absent the default, jsonrpc (JSON RPC 2.0 notifications) or list (3.3 http-json method)'),
  },
  validate(cfg) {
    if (cfg.method === undefined || cfg.method === null || cfg.method === '') {
      delete cfg.method;
      return;
    }
    if (!JsonMethods.includes(cfg.method as (typeof JsonMethods)[number])) throw new Error(`method must be ${JsonMethods.join(' or ')}, not ${String(cfg.method)}`);
  },
  encode,
  encodeTest,
  parseProps: parseJsonProps,
  durable: true,
});

export const plugin = notifierPlugin('notifier-json', jsonType);
