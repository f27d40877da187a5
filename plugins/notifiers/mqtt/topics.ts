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

export const Topics = {
  state: (prefix: string, type: string, fullId: string, field: string) => `${itemTopic(prefix, type, fullId)}/${field}`,
  action: (prefix: string, type: string, fullId: string) => `${itemTopic(prefix, type, fullId)}/action`,
  /** unit control as decisions.md reads it, beside the action topic */
  control: (prefix: string, fullId: string) => `${prefix}unit/${fullId}/control`,
  /** unit control as the spec's table writes it: no type level */
  controlShort: (prefix: string, fullId: string) => `${prefix}${fullId}/control`,
  log: (prefix: string) => `${prefix}log`,
  test: (prefix: string) => `${prefix}test`,
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

/** A well-formed subscription filter: '#' only last and alone in its level, '+' alone in its level. */
export function validFilter(filter: string): boolean {
  if (!filter || filter.length > 65535 || filter.includes('\0')) return false;
  const levels = filter.split('/');
  return levels.every((l, i) => (l.includes('#') ? l === '#' && i === levels.length - 1 : !l.includes('+') || l === '+'));
}

/** A topic one may publish to: no wildcards. */
export function validTopic(topic: string): boolean {
  return !!topic && topic.length <= 65535 && !/[#+\0]/.test(topic);
}

export const hasWildcard = (filter: string) => /[#+]/.test(filter);
