import { Subjects } from '../../../core/bus';
import type { Subject } from '../notifier-type';
import { type Values } from '../../../core/settings/schema';
import { bool, bound, defaults, int, seconds, text } from '../../../core/schema';

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

/** The settings of a notifier file every type shares: its switches and the delivery ones. */
export const CommonSettings = {
  enabled: bool(false, 'deliver events (also switched at run time by enable_notifier / disable_notifier)'),
  space: text('', 'notification space: a prefix the type puts on what it sends (topic, subject); empty: none'),
  timeout: seconds(0, 'seconds a send or a test may take; 0 or absent: [server] timeout'),
  skip_test: bool(false, 'start without the endpoint test'),
  interval: seconds(0, 'every this many seconds, send the state of every subscribed item again, changed or not (EVA ICS 3.3); 0 or absent: never; at least 0.1 s'),
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
