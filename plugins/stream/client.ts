import type WebSocket from 'ws';
import type { RawData } from 'ws';
import type { BusSubject } from '../../core/bus';
import type { ResolvedKey } from '../../core/auth/keys';
import { subscribed, type Subscription } from '../notifiers/contract';
import { canRead, type Oid } from '../items/contract';
import { throttleKey } from '../../core/auth/throttle';

/** The item an event is about, as the access rules take it; undefined when it names none. */
function itemOf(subject: BusSubject, e: Record<string, unknown>): Oid | undefined {
  if (subject === 'state' && typeof e.oid === 'string') {
    return { oid: e.oid, type: e.type, group: e.group, id: e.id, full_id: `${String(e.group)}/${String(e.id)}` } as Oid;
  }
  if (subject === 'action' && typeof e.item_oid === 'string') {
    return { oid: e.item_oid, type: e.item_type, group: e.item_group, id: e.item_id, full_id: `${String(e.item_group)}/${String(e.item_id)}` } as Oid;
  }
  return undefined;
}

/** One connection of the event stream: who it is, what it wants. */
export class StreamClient {
  auth?: ResolvedKey;
  /** the key or token it authenticated with: checked again at each ping round and on every revocation */
  presented?: string;
  /** its auth message is being checked (a wrong key's answer is held back): later messages wait in `early` */
  authing = false;
  /** messages that came while authing, in order (bounded) */
  early: { data: RawData; binary: boolean }[] = [];
  /** the address it counts under among the connections not yet authenticated (throttleKey) */
  readonly from: string;
  subs: Subscription[] = [];
  /** answered the last ping */
  alive = true;
  /** told it was too slow: nothing more is sent */
  closing = false;
  /** while it resumes: the last seq it was sent (or passed over) from the ring */
  cursor = 0;
  /** resuming: the ring's pump sends it events, live ones pass it by */
  replaying = false;
  /** counts its subscriptions: a pump of an older one stops */
  gen = 0;

  constructor(readonly ws: WebSocket, readonly ip: string) {
    this.from = throttleKey(ip);
  }

  /** May this client see the event (its subscriptions and its key's rights)? */
  wants(subject: BusSubject, event: unknown): boolean {
    const key = this.auth?.key;
    if (!key || this.closing) return false;
    if (!this.subs.some((s) => subscribed(s, subject, event))) return false;
    if (subject === 'log') return key.master || key.sysfunc;
    const item = itemOf(subject, event as Record<string, unknown>);
    return !!item && canRead(key, item);
  }
}
