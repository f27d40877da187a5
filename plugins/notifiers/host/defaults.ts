import { Subjects } from '../../../core/bus';
import type { Subject } from '../notifier-type';
import { type Values } from '../../../core/settings/schema';
import { bool, bound, choice, defaults, int, num, seconds, text } from '../../../core/schema';

/**
 * The settings every notifier file has besides its type's own, declared once
 * (core/settings/schema.ts builders, the same rule as etc/<product>.ini):
 * the host checks a file by them (host/config.ts), the command line sets,
 * shows and documents them by them.
 */

/**
 * Delivery settings: a notifier file may set any of these for itself; the
 * `[notifiers]` section of etc/<product>.ini (declared by the plugin with
 * this same declaration) changes them for every notifier of the controller.
 */
export const DeliverySettings = {
  queue_size: bound(10_000, 'most events waiting per notifier; past it the oldest waiting event is dropped (and counted)'),
  queue_max_bytes: bound(32 * 1024 * 1024, 'most bytes of events waiting per notifier (their values, outputs and messages in characters, plus 256 each); past it the oldest waiting events are dropped (and counted)', 'bytes'),
  max_batch: bound(100, 'most events in one send, unless the type sends fewer'),
  retries: int(5, 'retries of a failed batch before it is dropped (and counted; a durable web hook: to its dead letters); 0: none. A durable web hook waits for a receiver that is away (unreachable, 5xx, 408, 429) until outbox_max_age instead'),
  retry_delay: seconds(0.5, 'first retry delay; doubles with each retry, with jitter'),
  retry_max_delay: seconds(30, 'longest retry delay'),
  stop_drain: seconds(3, 'at stop, how long a notifier may take to deliver what is still queued'),
};

export const DeliveryDefaults = defaults(DeliverySettings);

export type DeliveryOptions = Values<typeof DeliverySettings>;

/**
 * What a notifier does with a new event when its queue (a durable
 * notifier's outbox) is at queue_size or queue_max_bytes: `drop` the oldest
 * waiting ones (counted in `dropped`), `refuse` the new one (counted in
 * `refused`: what was accepted stays), or `push_back`: refuse it too, and
 * make the API calls that would make events (update, action) wait for room,
 * at most the notifier's timeout, then answer busy (13 / 409).
 */
export const OverflowModes = ['drop', 'refuse', 'push_back'] as const;
export type Overflow = (typeof OverflowModes)[number];

/** A notifier's overflow mode: as its file says, else `refuse` for a durable one (it drops nothing it accepted), `drop` otherwise. */
export const overflowOf = (cfg: Record<string, unknown>, durable: boolean): Overflow =>
  (OverflowModes as readonly unknown[]).includes(cfg.overflow) ? cfg.overflow as Overflow : durable ? 'refuse' : 'drop';

/**
 * The settings of a type whose notifiers may keep an outbox (host/outbox.ts;
 * NotifierType.durable): declared once, spread into the type's settings.
 * `byDefault`: what `durable` is when the file says nothing, in words.
 */
export function durableSettings(byDefault: string) {
  return {
    durable: bool(`keep what is accepted and not yet delivered on disk (runtime/outbox/), and frames given up as dead letters; default: ${byDefault}`),
    outbox_max_age: num('seconds an event may wait in the outbox: an older one goes to the dead letters (counted as expired); absent: 7 days; 0: no limit', { min: 0 }),
    redeliver_dead: bool('send the dead letters again, under their ids, when test_notifier passes or deliveries succeed again after the endpoint was unreachable; absent: off'),
  };
}

/** `durable` of a notifier file, else the type's default. */
export const durableOf = (cfg: Record<string, unknown>, byDefault: boolean): boolean => (typeof cfg.durable === 'boolean' ? cfg.durable : byDefault);

/** The settings of a notifier file every type shares: its switches and the delivery ones. */
export const CommonSettings = {
  enabled: bool(false, 'deliver events (also switched at run time by enable_notifier / disable_notifier)'),
  space: text('', 'notification space: a prefix the type puts on what it sends (topic, subject); empty: none'),
  timeout: seconds(0, 'seconds a send or a test may take; 0 or absent: [server] timeout'),
  skip_test: bool(false, 'start without the endpoint test'),
  interval: seconds(0, 'every this many seconds, send the state of every subscribed item again, changed or not (EVA ICS 3.3); 0 or absent: never; at least 0.1 s'),
  overflow: choice(OverflowModes, 'at queue_size or queue_max_bytes: drop the oldest waiting events, refuse the new one, or push_back (refuse it, and hold update and action calls up to the timeout, then answer busy); absent: refuse for a durable notifier, drop otherwise'),
  ...DeliverySettings,
};

/** The fields of a notifier file that are not settings: what the file is and what it subscribes to. */
export const FileFields: Record<string, string> = {
  id: 'the notifier id: the file name without .json',
  type: 'the notifier type (one of the types below)',
  events: 'subscriptions: a list of {subject: state|action|log|server, ...} (the command line\'s subscribe)',
};

/**
 * Fields EVA ICS 3.3 wrote into notifier files (serialize() of its notifier
 * types, lib/eva/notify.py, tag v3.3.2). One a type here does not use is
 * accepted with an info line, so a 3.3 file still loads.
 */
export const Eva33NotifierFields: readonly string[] = [
  'interval', 'method', 'ssl_verify', 'simple_cleaning', 'uri', 'db', 'keep', 'username', 'password', 'notify_key',
  'host', 'port', 'qos', 'keepalive', 'collect_logs', 'api_enabled', 'discovery_enabled', 'announce_interval',
  'ping_interval', 'ca_certs', 'certfile', 'keyfile', 'retain_enabled', 'subscribe_all', 'timestamp_enabled',
  'apikey', 'mapfile', 'project', 'region', 'registry', 'token_expire',
];

/** The subjects a notifier file may subscribe to: the bus's and `server` (contract.ts Subject). */
export const NotifierSubjects: readonly Subject[] = [...Subjects, 'server'];
