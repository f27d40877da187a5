/**
 * The topics of the mqtt notifier (spec "MQTT notifier"), all under the
 * notifier's space prefix ('' or 'space/').
 */

/** Subtopics a state event is published to, in this order, when the event carries them. */
export const StateFields = ['status', 'value', 'nstatus', 'nvalue', 'action_enabled'] as const;

/** Subtopics that update an item (`mqtt_update`). */
export const UpdateFields = ['status', 'value'] as const;
export type UpdateField = (typeof UpdateFields)[number];

export const itemTopic = (prefix: string, type: string, fullId: string) => `${prefix}${type}/${fullId}`;

/**
 * The state subtopics of each item (StateFields order), then the item topic
 * itself (3.3's JSON state), built once per
 * notifier: a topic string made anew for every message cost more than the
 * rest of the notifier's part of a publication. Keyed by oid (type and full
 * id follow from it); bounded: at `max` items the memory starts again.
 */
export class StateTopics {
  private readonly byOid = new Map<string, readonly string[]>();

  constructor(private readonly prefix: string, private readonly max: number) {}

  of(oid: string, type: string, fullId: string): readonly string[] {
    let topics = this.byOid.get(oid);
    if (!topics) {
      if (this.byOid.size >= this.max) this.byOid.clear();
      topics = [...StateFields.map((f) => Topics.state(this.prefix, type, fullId, f)), itemTopic(this.prefix, type, fullId)];
      this.byOid.set(oid, topics);
    }
    return topics;
  }

  get size(): number {
    return this.byOid.size;
  }
}

export const Topics = {
  state: (prefix: string, type: string, fullId: string, field: string) => `${itemTopic(prefix, type, fullId)}/${field}`,
  action: (prefix: string, type: string, fullId: string) => `${itemTopic(prefix, type, fullId)}/action`,
  /** unit control as plugins/notifiers/README.md reads it, beside the action topic */
  control: (prefix: string, fullId: string) => `${prefix}unit/${fullId}/control`,
  /** unit control as the spec's table writes it: no type level */
  controlShort: (prefix: string, fullId: string) => `${prefix}${fullId}/control`,
  log: (prefix: string) => `${prefix}log`,
  test: (prefix: string) => `${prefix}test`,
  /** 3.3's server events (restart) */
  serverEvents: (prefix: string, product: string, system: string) => `${prefix}controller/${product}/${system}/events`,
  discovery: (prefix: string) => `${prefix}controller/discovery`,
  apiRequest: (prefix: string, product: string, system: string) => `${prefix}controller/${product}/${system}/api/request`,
  apiResponse: (prefix: string, product: string, system: string, requestId: string) =>
    `${prefix}controller/${product}/${system}/api/response/${requestId}`,
};

/** True when `topic` matches the subscription `filter` (MQTT 3.1.1 wildcards + and #). */
export function topicMatches(filter: string, topic: string): boolean {
  if (filter === topic) return true;
  const f = filter.split('/');
  const t = topic.split('/');
  // wildcards do not match topics starting with $ (broker internals)
  if (topic.startsWith('$') && (f[0] === '#' || f[0] === '+')) return false;
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '#') return i === f.length - 1;
    if (i >= t.length) return false;
    if (f[i] !== '+' && f[i] !== t[i]) return false;
  }
  return f.length === t.length;
}

/** Longest topic or topic filter MQTT allows: its length field counts UTF-8 bytes, not characters. */
export const MQTT_TOPIC_MAX_BYTES = 65_535;

/**
 * Why an MQTT topic filter is not valid, or undefined when it is: '#' only
 * last and alone in its level, '+' alone in its level, no NUL, at most
 * MQTT_TOPIC_MAX_BYTES. The one check of the mqtt notifier and core scripts.
 */
export function topicFilterProblem(filter: string): string | undefined {
  if (!filter) return 'the topic is empty';
  if (filter.includes('\u0000')) return 'the topic contains a NUL character';
  if (Buffer.byteLength(filter, 'utf8') > MQTT_TOPIC_MAX_BYTES) return `the topic is longer than ${MQTT_TOPIC_MAX_BYTES} bytes`;
  const levels = filter.split('/');
  for (let i = 0; i < levels.length; i++) {
    const level = levels[i];
    if (level.includes('#') && (level !== '#' || i !== levels.length - 1)) return 'the wildcard # must be a whole level and the last one';
    if (level.includes('+') && level !== '+') return 'the wildcard + must be a whole level';
  }
  return undefined;
}

/** Why a topic one publishes to is not valid (a filter without wildcards), or undefined. */
export function topicProblem(topic: string): string | undefined {
  if (/[#+]/.test(topic)) return 'a topic to publish to has no wildcards';
  return topicFilterProblem(topic);
}

export const validFilter = (filter: string): boolean => topicFilterProblem(filter) === undefined;
export const validTopic = (topic: string): boolean => topicProblem(topic) === undefined;

export const hasWildcard = (filter: string) => /[#+]/.test(filter);
