import { Client, type Dispatcher } from 'undici';
import type { Subject } from './contract';
import { describe } from '../../core/log';
import type { DeliveryError, Endpoint, FrameInfo, NotifierConfig, NotifierType, SettingsSchema } from './contract';
import { checkHttpUri } from './host/config';
import { shownUri } from './host/redaction';
import { durableOf, durableSettings } from './host/defaults';
import { text, bound, defaults, int } from '../../core/schema';
import { frameId, secretKey, signature, signingKeys } from './signature';

/**
 * The shared sender of the web hook notifier types (json, http-post, http):
 * each type only says how events become requests; sending, the timeout, the
 * answer check, the start-up test and partial failures are done here once.
 */
export const WebhookLimits = {
  max_answer_bytes: bound(64 * 1024, 'most bytes of an answer read to check it; a longer answer is a failure', 'bytes'),
};

export const WebhookDefaults = defaults(WebhookLimits);

export interface HookRequest {
  method: 'GET' | 'POST';
  /** query parameters (GET) */
  query?: Record<string, string>;
  /** body and its content type (POST) */
  body?: string;
  contentType?: string;
  /** whether the answer means success (absent: answerIsSuccess) */
  accepts?: (status: number, body: string) => boolean;
}

/** Requests of one send, each with the events it carries (so a failed one names its events). */
export type HookChunk = { request: HookRequest; events: unknown[] };

export interface WebhookSpec {
  name: string;
  aliases?: string[];
  description: string;
  /** type settings beyond uri, notify_key and the credentials */
  settings?: SettingsSchema;
  /** the requests that deliver `events` of `subject` */
  encode(cfg: NotifierConfig, subject: Subject, events: unknown[]): HookChunk[];
  /** the test request (subject `test`) */
  encodeTest(cfg: NotifierConfig): HookRequest;
  /** the type's own checks of its settings, normalizing them */
  validate?(cfg: NotifierConfig): void;
  /** CLI PROPS beyond a bare uri (absent: PROPS is the uri) */
  parseProps?(props: string): Record<string, unknown>;
  /** whether a notifier without a `durable` setting keeps an outbox (json: yes; the deprecated types: no) */
  durable?: boolean;
}

/** The members every frame starts with: key (when set), subject, space (when set). */
export function frameHead(cfg: NotifierConfig, subject: string, subjectField = 'subject'): Record<string, string> {
  const head: Record<string, string> = {};
  if (typeof cfg.notify_key === 'string' && cfg.notify_key) head.k = cfg.notify_key;
  head[subjectField] = subject;
  if (cfg.space) head.space = cfg.space;
  return head;
}

/** Whether a receiver's answer means success: 202, an empty body, {"result":"OK"} or {"ok":true}. */
export function answerIsSuccess(status: number, body: string): boolean {
  if (status === 202) return true;
  if (status < 200 || status > 299) return false;
  if (body.trim() === '') return true;
  try {
    const a = JSON.parse(body) as { result?: unknown; ok?: unknown } | null;
    return !!a && typeof a === 'object' && (a.result === 'OK' || a.ok === true);
  } catch {
    return false;
  }
}

/**
 * The keep-alive connection of one notifier: an undici Client for its
 * receiver's origin, made at its first request, destroyed at its stop.
 * undici's dispatcher is driven directly (a handler of its own, no answer
 * stream): node:http's ClientRequest, its agent and IncomingMessage cost
 * most of a json hook's request, fetch (undici with web streams) more
 * still (test/bench/README.md, "Where a json web hook's CPU goes").
 * Each notifier has a connection of its own: none goes from one notifier
 * to another, so a notifier's first request (its start-up test) always
 * opens its own. One request at a time on it, in the order made (no
 * pipelining): the sends of a notifier are one after the other anyway, and
 * a connection closed under a request fails that request only. A Client,
 * not a Pool: a Pool takes a connection as free only once undici has
 * drained it, after the answer that lets the next send go, so it opened a
 * second connection and went back and forth between the two.
 */
export class HookAgents {
  private client: Client | undefined;
  private origin = '';

  of(url: URL): Client {
    if (this.client && this.origin === url.origin) return this.client;
    this.close();
    this.origin = url.origin;
    // no redirect is followed (a dispatcher's own requests follow none); TLS checks the certificate as node:https does.
    // The host's clock (the notifier's timeout, any length) is a request's only one: undici's own (10 s to connect,
    // 300 s for the head and between body parts) are off, as node:http had none
    return (this.client = new Client(url.origin, { pipelining: 1, connectTimeout: 0, headersTimeout: 0, bodyTimeout: 0 }));
  }

  close(): void {
    // destroy, not close: a request still in hand at stop is not waited for
    void this.client?.destroy().catch(() => undefined);
    this.client = undefined;
  }
}

/** An answer: its status and at most the bound's bytes of its body (undefined: it was longer). */
interface HookAnswer { status: number; body: string | undefined }

/**
 * One request as an undici dispatch handler. The signals (the host's clock,
 * the endpoint's stop) end it by one listener each (this object, as their
 * event listener), taken off when it ends; aborted before undici has taken
 * it on a connection, it is cut as soon as it is.
 */
class HookCall implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private status = 0;
  private size = 0;
  private readonly parts: Buffer[] = [];
  private done = false;

  constructor(
    private readonly limit: number,
    private readonly signal: AbortSignal,
    private readonly also: AbortSignal | undefined,
    private readonly resolve: (a: HookAnswer) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    signal.addEventListener('abort', this, { once: true });
    also?.addEventListener('abort', this, { once: true });
  }

  /** A signal aborted: the request ends with its reason, its connection closed. */
  handleEvent(): void {
    const reason = (this.signal.aborted ? this.signal.reason : this.also?.reason) as Error;
    this.settle(undefined, reason);
    this.controller?.abort(reason);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.done) controller.abort(new Error('ended before it was sent'));
  }

  onResponseStart(_c: Dispatcher.DispatchController, status: number): void {
    this.status = status;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.done) return;
    this.size += chunk.length;
    if (this.size > this.limit) {
      // the rest is not read: the connection goes with it
      this.settle({ status: this.status, body: undefined });
      controller.abort(new Error('answer too long'));
      return;
    }
    this.parts.push(chunk);
  }

  onResponseEnd(): void {
    const p = this.parts;
    this.settle({ status: this.status, body: p.length === 1 ? p[0].toString('utf8') : Buffer.concat(p).toString('utf8') });
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    this.settle(undefined, err);
  }

  private settle(answer: HookAnswer | undefined, err?: unknown): void {
    if (this.done) return;
    this.done = true;
    this.signal.removeEventListener('abort', this);
    this.also?.removeEventListener('abort', this);
    if (answer) this.resolve(answer);
    else this.reject(err);
  }
}

/**
 * One request; resolves with the status and at most `limit` bytes of the
 * answer (undefined: it was longer). No redirect is followed. `also`: a
 * second signal that ends it, the endpoint's stop.
 */
function request(url: URL, method: 'GET' | 'POST', headers: string[], body: string | undefined, limit: number, signal: AbortSignal, agents: HookAgents, also?: AbortSignal): Promise<HookAnswer> {
  return new Promise((resolve, reject) => {
    if (signal.aborted || also?.aborted) {
      reject((signal.aborted ? signal.reason : also?.reason) as Error);
      return;
    }
    const call = new HookCall(limit, signal, also, resolve, reject);
    agents.of(url).dispatch({ path: url.pathname + url.search, method, headers, body }, call);
  });
}

/** HTTP basic credentials of a hook. */
export interface HookAuth { username: string; password: string }

/**
 * The credentials of a notifier: its `username` and `password` fields (as
 * EVA ICS 3.3 wrote them; both must be set, as 3.3 required), else those
 * inside its uri.
 */
function hookAuth(cfg: NotifierConfig, url: URL): HookAuth | undefined {
  if (typeof cfg.username === 'string' && typeof cfg.password === 'string') return { username: cfg.username, password: cfg.password };
  if (url.username || url.password) return { username: decodeURIComponent(url.username), password: decodeURIComponent(url.password) };
  return undefined;
}

/** How a request is marked: its frame id (header webhook-id) and the keys that sign it now (none: unsigned). */
export interface HookSigning { id: string; keys: Buffer[] }

/** Where a notifier's requests go: its uri without credentials, and the basic authorization they become. */
interface HookTarget { url: URL; authorization?: string }

/** The target of each notifier config, made at its first request (the uri and credentials are fixed once read). */
const targets = new WeakMap<NotifierConfig, HookTarget>();

function targetOf(cfg: NotifierConfig): HookTarget {
  let t = targets.get(cfg);
  if (t) return t;
  const url = new URL(cfg.uri as string);
  const auth = hookAuth(cfg, url);
  // the credentials go as basic authorization, as 3.3 (requests) sent them, not in the URL
  url.username = '';
  url.password = '';
  t = { url, authorization: auth && `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}` };
  targets.set(cfg, t);
  return t;
}

/**
 * Send one request until `signal` (or `also`) aborts it (the host's timeout,
 * or the stop); throws unless the answer is a success.
 */
export async function sendHook(cfg: NotifierConfig, req: HookRequest, signal: AbortSignal, agents: HookAgents, signing?: HookSigning, also?: AbortSignal): Promise<void> {
  const target = targetOf(cfg);
  let url = target.url;
  if (req.query) {
    url = new URL(url);
    for (const k in req.query) url.searchParams.append(k, req.query[k]);
  }
  // a flat list of names and values: what undici's dispatcher takes without making one (the length it adds itself)
  const headers: string[] = req.contentType ? ['Content-Type', req.contentType] : [];
  if (signing) headers.push('webhook-id', signing.id);
  if (signing?.keys.length) {
    // each try is signed anew (its own timestamp) under the frame's one id
    const timestamp = Math.floor(Date.now() / 1000);
    headers.push('webhook-timestamp', String(timestamp), 'webhook-signature', signature(signing.keys, signing.id, timestamp, req.body ?? url.search.slice(1)));
  }
  if (target.authorization) headers.push('Authorization', target.authorization);
  let r: HookAnswer;
  try {
    r = await request(url, req.method, headers, req.body, WebhookDefaults.max_answer_bytes, signal, agents, also);
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    if (also?.aborted) throw also.reason;
    const cause = (err as { cause?: unknown }).cause;
    const e: DeliveryError = new Error(cause ? describe(cause) : describe(err));
    if (unreachable(err)) e.transient = true;
    throw e;
  }
  const body = r.body;
  if (body === undefined) throw refusal(r.status, `answer longer than ${WebhookDefaults.max_answer_bytes} bytes`);
  if (!(req.accepts ?? answerIsSuccess)(r.status, body)) throw refusal(r.status, `answer HTTP ${r.status}: ${body.slice(0, 200)}`);
}

/**
 * A receiver's answer that is not a success. A 4xx other than 408 (timeout)
 * and 429 (too many requests) says the frame itself is refused: trying it
 * again would get the same answer, so it is `permanent`. A 5xx, 408 or 429
 * says "not now": `transient`, as a receiver that cannot be reached. Any
 * other (a 2xx whose body is no success, an answer too long) is neither: the
 * host's `retries` bound it.
 */
function refusal(status: number, message: string): DeliveryError {
  const e: DeliveryError = new Error(message);
  e.status = status;
  e.permanent = status >= 400 && status < 500 && status !== 408 && status !== 429;
  e.transient = status >= 500 || status === 408 || status === 429;
  return e;
}

/**
 * The system errors of a receiver that cannot be reached now (the
 * request's error or its cause): refused, reset, timed out, no route, a name server that did not
 * answer. Not: a name that does not exist, a certificate refused, a redirect
 * (a setting to mend, not an outage to ride out).
 */
const Unreachable = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'EHOSTDOWN', 'ENETUNREACH', 'ENETDOWN', 'EAI_AGAIN',
  'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CLOSED',
]);

function unreachable(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && Unreachable.has(code)) return true;
  }
  return false;
}

/** The settings every web hook type has. */
const HookSettings: SettingsSchema = {
  uri: text('the receiver, http:// or https:// (credentials in it go as basic authorization)').req(),
  notify_key: text('sent as `k` with every request; `$ID`: the API key with that id (as 3.3)'),
  username: text('basic authorization user (with password; else those in uri)'),
  password: text('basic authorization password', { secret: true }),
  signing_secret: text('sign every request (Standard Webhooks headers webhook-id, -timestamp, -signature); whsec_ + base64 of 24 to 64 bytes', { secret: true }),
  signing_secret_previous: text('the secret before a rotation: signs beside signing_secret until signing_previous_until', { secret: true }),
  signing_previous_until: int('when the previous secret stops signing (seconds since the epoch; absent: while it is set)', { min: 0 }),
  ...durableSettings('on for json, off for http-post and http'),
};

/** The signing keys a notifier's settings give (checked: a bad secret is refused by name, never shown). */
function hookKeys(cfg: NotifierConfig): { current?: Buffer; previous?: Buffer; until?: number } {
  const set = (v: unknown) => v !== undefined && v !== null && v !== '';
  if (!set(cfg.signing_secret)) {
    if (set(cfg.signing_secret_previous)) throw new Error('signing_secret_previous needs signing_secret');
    return {};
  }
  return {
    current: secretKey(cfg.signing_secret, 'signing_secret'),
    previous: set(cfg.signing_secret_previous) ? secretKey(cfg.signing_secret_previous, 'signing_secret_previous') : undefined,
    until: typeof cfg.signing_previous_until === 'number' ? cfg.signing_previous_until : undefined,
  };
}

/** Where a `$ID` notify key is looked up: the controller's API keys. */
interface KeyLookup { get(id: string): { key: string } | undefined }

/** One notifier's endpoint: requests one after the other, partial failures reported as DeliveryError. */
class WebhookEndpoint implements Endpoint {
  private readonly stopping = new AbortController();
  private readonly agents = new HookAgents();
  private readonly secrets: ReturnType<typeof hookKeys>;
  /**
   * The frame id of a chunk, by its first event: the host retries the same
   * event objects, so a retried frame keeps its id and a receiver can drop
   * the copy. A frame of another length (what is left after a partial
   * failure) is another frame and gets another id.
   */
  private readonly ids = new WeakMap<object, string>();

  constructor(private readonly spec: WebhookSpec, private readonly cfg: NotifierConfig, private readonly keys?: () => KeyLookup) {
    this.secrets = hookKeys(cfg);
  }

  /** How a chunk of `events` is signed now (undefined: the notifier does not sign). */
  private signing(events: readonly unknown[], frame?: FrameInfo): HookSigning | undefined {
    const { current, previous, until } = this.secrets;
    // unsigned, a durable notifier's frame still carries its id: receivers can drop a frame sent again after a restart
    if (!current) return frame && { id: frame.id, keys: [] };
    return { id: frame?.id ?? this.frameIdOf(events), keys: signingKeys(current, previous, until, Date.now() / 1000) };
  }

  /** A frame id when the host gives none (a notifier kept in memory). */
  private frameIdOf(events: readonly unknown[]): string {
    const first = events[0];
    // a `server` event is text, which has no identity to keep: each try gets a new id
    if (first === null || typeof first !== 'object') return frameId();
    let id = this.ids.get(first);
    if (!id) {
      id = frameId();
      this.ids.set(first, id);
    }
    return events.length === 1 ? id : `${id}_${events.length}`;
  }

  /** The config a request is made from: a notify key `$ID` is the API key with that id, now (3.3; none when unknown). */
  private current(): NotifierConfig {
    const nk = this.cfg.notify_key;
    if (typeof nk !== 'string' || !nk.startsWith('$') || !this.keys) return this.cfg;
    let key: string | undefined;
    // the command line has no key store: there `$ID` names no key
    try { key = this.keys().get(nk.slice(1))?.key; } catch { key = undefined; }
    return { ...this.cfg, notify_key: key };
  }

  stop(): void {
    this.stopping.abort(new Error('stopped')); // a request still hanging at stop is not waited for
    this.agents.close();
  }

  test(signal: AbortSignal): Promise<void> {
    return sendHook(this.cfg, this.spec.encodeTest(this.current()), signal, this.agents, this.signing([]), this.stopping.signal);
  }

  async send(subject: Subject, events: unknown[], signal: AbortSignal, frame?: FrameInfo): Promise<void> {
    const chunks = this.spec.encode(this.current(), subject, events);
    // the host's frame id names the whole batch; a type that splits it (http: a request per event) numbers the parts
    const idOf = (i: number) => (frame && chunks.length > 1 ? { id: `${frame.id}.${i}` } : frame);
    const remaining: unknown[] = [];
    let first: unknown;
    const stopping = this.stopping.signal;
    for (let i = 0; i < chunks.length; i++) {
      try {
        await sendHook(this.cfg, chunks[i].request, signal, this.agents, this.signing(chunks[i].events, idOf(i)), stopping);
      } catch (err) {
        first ??= err;
        remaining.push(...chunks[i].events);
        if (this.cfg.stop_on_error === true || signal.aborted || stopping.aborted) {
          for (const c of chunks.slice(i + 1)) remaining.push(...c.events);
          break;
        }
      }
    }
    if (first !== undefined) {
      const e: DeliveryError = new Error(describe(first));
      e.remaining = remaining;
      e.status = (first as DeliveryError).status;
      e.permanent = (first as DeliveryError).permanent;
      // the host's clock ran out (the signal's reason): no answer in time is an outage too
      e.transient = (first as DeliveryError).transient === true || (first as Error).name === 'TimeoutError';
      throw e;
    }
  }
}

/** A web hook notifier type from its encoding. */
export function webhookType(spec: WebhookSpec): NotifierType {
  return {
    name: spec.name,
    aliases: spec.aliases,
    description: spec.description,
    settings: { ...HookSettings, ...(spec.settings ?? {}) },
    parseProps(props) {
      if (spec.parseProps) {
        const out = spec.parseProps(props);
        checkHttpUri(out.uri);
        return out;
      }
      return { uri: checkHttpUri(props) };
    },
    target: (cfg) => shownUri(cfg.uri),
    validate(cfg) {
      checkHttpUri(cfg.uri);
      hookKeys(cfg);
      spec.validate?.(cfg);
    },
    create: (cfg, env) => new WebhookEndpoint(spec, cfg, env && (() => env.ctx.keys)),
    durable: (cfg) => durableOf(cfg, spec.durable === true),
  };
}
