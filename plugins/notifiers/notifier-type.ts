import type { PluginContext, PluginDefinition } from '../../core/plugin';
import type { ModuleLogger } from '../../core/log';
import type { BusSubject } from '../../core/bus';
import type { Decl, Decls, Type } from '../../core/schema';

import type { StateEvent, ActionEvent } from '../items/contract';
import type { LogRecord } from '../../core/log';

/**
 * What a notifier type is: the declaration a plugin of kind `notifier`
 * exports, its settings, the notifier files it is given and the endpoints it
 * makes. contract.ts passes all of it on (the types and plugin authors read
 * it there); the host's own modules that the contract also passes on
 * (host/config.ts, host/filter.ts) take these declarations from here, so that
 * no import leads back to the contract.
 */

export type { StateEvent, ActionEvent, LogRecord };

/**
 * The subjects a notifier subscribes to: the bus's, and `server`, the
 * controller's own events (EVA ICS 3.3: `restart` when it stops or on
 * notify_restart), which the host sends itself.
 */
export type Subject = BusSubject | 'server';

/** What each subject's events are: the objects the items and the log put on the bus. */
export interface NotifierEvents {
  state: StateEvent;
  action: ActionEvent;
  log: LogRecord;
  /** what the controller does: `restart` */
  server: string;
}

/**
 * The settings of a notifier type: name -> declaration, made with the
 * core/schema builders (`text('the receiver').req()`, `int('most rows kept',
 * { default: 1000000, min: 1 })`), or written as the same plain objects
 * (`{ type: 'integer', default: 5, min: 1, description: '...' }`). The host
 * checks the type and range before the type sees the config (converting
 * text such as "5" to a number); the command line shows, sets and documents
 * them by this declaration. `default` is what props, --help and get_notifier
 * show for a file without it; the type applies it.
 */
export type SettingsSchema = Decls;

/** One setting of a notifier type. */
export type SettingDecl = Decl;

/** The types a notifier setting may have. */
export type SettingKind = Extract<Type, 'string' | 'number' | 'integer' | 'boolean' | 'object'>;

/** One subscription of a notifier (plugins/notifiers/README.md). */
export interface Subscription {
  subject: Subject;
  /** state/action: item types, '#' for all */
  types?: string[];
  /** state/action: groups, '#' for all */
  groups?: string[];
  /** state/action: item oids (instead of types + groups) */
  items?: string[];
  /** log: minimum level */
  level?: number;
  /** action: statuses, '#' for all */
  action_status?: string[];
}

/** A notifier config file runtime/<product>_notify.d/<id>.json (common fields + the type's own). */
export interface NotifierConfig {
  id: string;
  type: string;
  enabled: boolean;
  space?: string;
  /** seconds */
  timeout?: number;
  skip_test?: boolean;
  events: Subscription[];
  [field: string]: unknown;
}

/** What the host gives an endpoint. */
export interface EndpointEnv {
  /** the type plugin's context: services (items, corescripts), config, paths */
  ctx: PluginContext;
  /** a logger whose records never become log events */
  log: ModuleLogger;
}

/**
 * One configured notifier's connection to its endpoint. The host owns time:
 * `send` and `test` get a signal that aborts at the notifier's `timeout`
 * (a call still running then counts as failed, whatever it does later, and
 * the batch is retried by the host's rules); `stop` is called exactly once,
 * and is given what is left of `stop_drain`.
 */
export interface Endpoint {
  /** connect; the host calls it once before the first send */
  start?(): Promise<void>;
  /** release everything (connections, files, timers) */
  stop(): Promise<void> | void;
  /** the endpoint test (CLI `test`, start-up test); throws when it fails */
  test(signal: AbortSignal): Promise<void>;
  /**
   * deliver a batch of events of one subject; throws when it fails (the host
   * retries). A DeliveryError with `remaining` says which events are still
   * undelivered (the others count as sent and are not sent again).
   */
  send<S extends Subject>(subject: S, events: NotifierEvents[S][], signal: AbortSignal, frame?: FrameInfo): Promise<void>;
  /**
   * A type whose link can be down for long (a broker away): resolves when a
   * batch of `subject` should be sent. The host waits for it before each send
   * without the timeout (only stopping or disabling the notifier ends the
   * wait), so a long outage fills the bounded queue instead of using up the
   * retries. Absent: always ready.
   */
  waitReady?(subject: Subject): Promise<void>;
  /** type-specific live figures for get_notifier */
  info?(): Record<string, unknown>;
  /**
   * A type with a lasting link (a broker connection): whether it is up, since
   * when it is down (ms) and why, for /health and get_notifier. Absent: the
   * host judges by its sends alone.
   */
  connection?(): { up: boolean; downSince?: number; error?: string };
  /**
   * enable_notifier / disable_notifier: a disabled notifier neither sends nor
   * acts on what its endpoint receives (mqtt control, updates, API calls)
   */
  setEnabled?(enabled: boolean): void;
}

export interface NotifierType {
  /** the `type` field value */
  name: string;
  /** other names read as this type (json: http-json) */
  aliases?: string[];
  /** one line for the help */
  description?: string;
  /** the type's own settings (the common ones, timeout, space, retries..., are the host's) */
  settings: SettingsSchema;
  /**
   * Whether a notifier of this type keeps what it accepted on disk until it
   * is delivered (host/outbox.ts) and its given-up frames as dead letters
   * (json by default; mqtt and sparkplug when their file says `durable`).
   * Such a type's `send` resolves only once the endpoint has the batch for
   * good (a web hook's answer, a broker's acknowledgement): the outbox lets
   * the events go then. Absent: never.
   */
  durable?(cfg: NotifierConfig): boolean;
  /** most events in one send (the host's max_batch when absent) */
  maxBatch?: number;
  /** one endpoint per configured notifier; throws when the config is unusable (a type with `forController` needs none) */
  create?(cfg: NotifierConfig, env: EndpointEnv): Endpoint;
  /**
   * A type that keeps state per controller (the files in use, a login
   * throttle): called once per controller when the type's plugin starts
   * (and by the command line), with that plugin's context; what it returns
   * creates that controller's endpoints. What it registers through `ctx`
   * (onSave, onReady) belongs to the type's plugin and goes when it stops.
   */
  forController?(ctx: PluginContext): EndpointFactory;
  /**
   * CLI `create ID TYPE:PROPS`: the PROPS text into settings; throws when
   * malformed. Absent: PROPS is the first required setting.
   */
  parseProps?(props: string): Record<string, unknown>;
  /** what `list` shows as the target (absent: the first required setting) */
  target?(cfg: NotifierConfig): string;
  /** checks beyond the schema, normalizing the config (throws when unusable) */
  validate?(cfg: NotifierConfig): void;
  /** the notifier object as get_notifier shows it (absent: the settings, secrets hidden) */
  serialize?(cfg: NotifierConfig): Record<string, unknown>;
}

/** How the endpoints of one controller are created (NotifierType.forController). */
export interface EndpointFactory {
  /** one endpoint per configured notifier; throws when the config is unusable */
  create(cfg: NotifierConfig, env: EndpointEnv): Endpoint;
}

/** A notifier plugin: its definition with the type it declares. */
export interface NotifierPlugin extends PluginDefinition {
  kind: 'notifier';
  notifier: NotifierType;
}

/** What Endpoint.send may throw when part of a batch got through, or when trying again is no use. */
export interface DeliveryError extends Error {
  /** the events of the batch that were not delivered, in order */
  remaining?: unknown[];
  /** the receiver refused the frame for good (a web hook's 4xx other than 408 and 429): a durable notifier moves it to its dead letters at once */
  permanent?: boolean;
  /**
   * the receiver could not be reached (connection refused or reset, no answer
   * in time) or said to come back later (a web hook's 5xx, 408, 429): a
   * durable notifier keeps the frame in its outbox and tries again, backing
   * off, until it expires (outbox_max_age), whatever `retries` says
   */
  transient?: boolean;
  /** the receiver's HTTP status, when it answered */
  status?: number;
}

/** What the host tells an endpoint of the frame it sends: a durable notifier's frame id (the same on every try, and after a restart). */
export interface FrameInfo { id: string }
