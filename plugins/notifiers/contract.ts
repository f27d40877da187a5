import type { Endpoint, NotifierConfig } from './notifier-type';

/**
 * The contract between the notifier host (plugin `notifiers`, service
 * `notifiers`) and the notifier types, and what other plugins use of the
 * host (at the end). plugins/README.md is the guide with complete examples.
 *
 * A notifier type is one declaration, exported by a plugin of kind
 * `notifier` as `plugin.notifier`: the host registers it when the plugin
 * starts, and the notifier command line reads the same object (its settings
 * for `props`, `set` and the help) without starting anything. That
 * declaration, and what goes with it, is notifier-type.ts's, passed on here.
 */

export type {
  ActionEvent, DeliveryError, Endpoint, EndpointEnv, EndpointFactory, FrameInfo, LogRecord, NotifierConfig, NotifierEvents, NotifierPlugin,
  NotifierType, SettingDecl, SettingKind, SettingsSchema, StateEvent, Subject, Subscription,
} from './notifier-type';


/** Delivery figures of one notifier (get_notifier); a durable one adds its outbox's and dead letters' figures. */
export interface NotifierStats {
  queued: number; queued_bytes: number; sent: number; failed: number; dropped: number;
  /** a durable notifier: events held on disk, journal bytes, fsyncs, bytes written, refused (disk full), expired, dead letters kept, events moved there, letters dropped at their bound */
  outbox?: Record<string, number>;
  /** overflow refuse or push_back: the mode, events refused at the bound; push_back: calls held back, and those answered busy */
  overflow?: string; refused?: number; pushed_back?: number; busy?: number;
}

/** Service `notifiers`. */
export interface NotifierHost {
  /** a running notifier's config (mqtt core-script subscriptions look theirs up) */
  get(id: string): { config: NotifierConfig; endpoint: Endpoint | undefined; enabled: boolean } | undefined;
  /** the id of the default MQTT notifier (the first enabled mqtt one), if any */
  defaultOf(type: string): string | undefined;
  /** ids of the loaded notifiers, sorted */
  list(): string[];
  /** the notifier object as list_notifiers / get_notifier show it; `stats` adds the live figures */
  describe(id: string, stats?: boolean): Record<string, unknown> | undefined;
  /** enable or disable until restart; false when the id is unknown; rejects when it cannot start */
  setEnabled(id: string, enabled: boolean): Promise<boolean>;
  /** test_notifier: the endpoint test within the notifier's timeout; false when the id is unknown; rejects (ApiError) when it fails */
  test(id: string): Promise<boolean>;
  /** a `server` event (`restart`) to every enabled notifier subscribed to `server` */
  notifyServer(event: string): void;
  /** list_notifier_types: what a notifier file holds, from the declarations the files are checked by */
  settings(): NotifierFileSettings;
  /**
   * Before a call makes events of an item (update, action): undefined when
   * there is room, else a wait while a notifier with overflow push_back is
   * full, rejected busy (ApiError 13) past its timeout or when `signal` aborts
   */
  admit(item: { oid: string; type: string; group: string; id: string }, signal?: AbortSignal): Promise<void> | undefined;
  /** a durable notifier's dead letters; undefined when the id is unknown; throws (ApiError) when the notifier keeps none */
  deadLetters(id: string): DeadLetterAccess | undefined;
}

/** The dead letters of one durable notifier (host/dead-letters.ts): time range in seconds. */
export interface DeadLetterAccess {
  list(filter: { ids?: readonly string[]; from?: number; to?: number }, offset?: number, limit?: number): Record<string, unknown>[];
  replay(filter: { ids?: readonly string[]; from?: number; to?: number }): Promise<{ letters: number; events: number }>;
  drop(filter: { ids?: readonly string[]; from?: number; to?: number }): Promise<number>;
}

/** The declared settings of notifier files: the file's own fields, the settings every type shares, each loaded type's. */
export interface NotifierFileSettings {
  fields: Record<string, string>;
  common: Record<string, Record<string, unknown>>;
  types: Record<string, { description?: string; aliases?: string[]; settings: Record<string, Record<string, unknown>> }>;
}

// what other plugins use of the notifier host: the notifier files (items checks
// mqtt_update_default by them), the subscriptions a notifier file holds, read
// and matched as the host does (the event stream subscribes its clients so)
export { normalizeSubscriptions, readNotifierFiles } from './host/config';
export { subscribed } from './host/filter';

// what the built-in types use of the host: http(s) URIs and secrets checked and shown as
// the host shows them, and the items a subscription selects (the prometheus page)
export { checkHttpUri } from './host/config';
export { HiddenPassword, shownUri, withoutSecrets } from './host/redaction';
export { itemSelected } from './host/filter';
export { eventSize } from './host/event-size';
// the settings of a type whose notifiers may be durable (an outbox on disk), declared once
export { durableOf, durableSettings } from './host/defaults';
