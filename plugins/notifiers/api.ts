import type { PluginContext } from '../../core/plugin';
import type { ModuleLogger } from '../../core/log';
import type { Subject } from '../../core/bus';
import type { HistoryBackend } from './db/backend';

/**
 * The contract between the notifier host (plugin `notifiers`, service
 * `notifiers`) and the notifier type plugins (kind `notifier`). Types only.
 *
 * A type plugin exports, besides its plugin definition, the type itself as
 * `plugin.notifier` (a NotifierType) and registers it at start:
 *   start(ctx) { ctx.service('notifiers').registerType(ctx, myType) }
 * The notifier command line reads `plugin.notifier` without starting anything.
 */

/** One subscription of a notifier (decisions.md "Notifiers"). */
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

/** One configured notifier's connection to its endpoint. */
export interface Endpoint {
  /** connect; the host calls it once before the first send */
  start?(): Promise<void>;
  stop?(): Promise<void>;
  /** the endpoint test (CLI `test`, start-up test); throws when it fails */
  test(): Promise<void>;
  /**
   * deliver a batch of events of one subject; throws when it fails (the host
   * retries). A DeliveryError with `remaining` says which events are still
   * undelivered (the others count as sent and are not sent again).
   */
  send(subject: Subject, events: unknown[]): Promise<void>;
  /** type-specific live figures for get_notifier */
  info?(): Record<string, unknown>;
  /**
   * enable_notifier / disable_notifier: a disabled notifier neither sends nor
   * acts on what its endpoint receives (mqtt control, updates, API calls)
   */
  setEnabled?(enabled: boolean): void;
  /** db notifiers: the history they write, for the history API (state_history, state_log) to read */
  history?: HistoryBackend;
}

export interface NotifierType {
  /** the `type` field value */
  type: string;
  /** other names read as this type (json: http-json) */
  aliases?: string[];
  /** most events in one send (the host's max_batch when absent) */
  maxBatch?: number;
  /** fields of this type with their defaults (host fills them in, CLI `props`/`set` know them) */
  fields: Record<string, unknown>;
  /** CLI `create ID PROPS`: the PROPS text after `type:` into fields; throws when malformed */
  parseProps(props: string): Record<string, unknown>;
  /** what `list` shows as the target */
  target(cfg: NotifierConfig): string;
  /** check and normalize a loaded config (throws when unusable) */
  validate?(cfg: NotifierConfig): void;
  /** the notifier object as get_notifier / list_notifiers show it (type-specific fields) */
  serialize?(cfg: NotifierConfig): Record<string, unknown>;
  create(cfg: NotifierConfig, env: EndpointEnv): Endpoint;
}

/** What Endpoint.send may throw when part of a batch got through. */
export interface DeliveryError extends Error {
  /** the events of the batch that were not delivered, in order */
  remaining?: unknown[];
}

/** Delivery figures of one notifier (get_notifier). */
export interface NotifierStats { queued: number; sent: number; failed: number; dropped: number }

/** Service `notifiers`. */
export interface NotifierHost {
  registerType(ctx: PluginContext, type: NotifierType): void;
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
}
