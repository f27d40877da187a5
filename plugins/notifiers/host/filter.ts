import { groupMatches } from '../../../core/toolkit/group-pattern';
import type { Subject, Subscription } from '../notifier-type';

export interface ItemRef { oid: string; type: string; group: string; id: string }

/** Items by id (oid or group/id, `#` all), or types together with groups. */
export function itemSelected(sub: Subscription, it: ItemRef): boolean {
  const fullId = `${it.group}/${it.id}`;
  if (sub.items?.some((i) => i === '#' || i === it.oid || i === fullId)) return true;
  if (!sub.types?.length || !sub.groups?.length) return false;
  return (sub.types.includes('#') || sub.types.includes(it.type)) && sub.groups.some((g) => groupMatches(g, it.group));
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** The item an event is about, from either event shape; undefined when the event names none. */
export function itemOf(subject: Subject, event: unknown): ItemRef | undefined {
  if (!event || typeof event !== 'object') return undefined;
  const e = event as Record<string, unknown>;
  if (subject === 'state') {
    if (typeof e.oid !== 'string') return undefined;
    return { oid: e.oid, type: str(e.type), group: str(e.group), id: str(e.id) };
  }
  if (typeof e.item_oid !== 'string') return undefined;
  return { oid: e.item_oid, type: str(e.item_type), group: str(e.item_group), id: str(e.item_id) };
}

/** Default log level of a log subscription without one (as the old system). */
export const DefaultLogLevel = 20;

/** Whether an event of `subject` falls under the subscription (spec: Notifier command-line management). */
export function subscribed(sub: Subscription, subject: Subject, event: unknown): boolean {
  if (sub.subject !== subject) return false;
  if (subject === 'server') return typeof event === 'string';
  if (!event || typeof event !== 'object') return false;
  const e = event as Record<string, unknown>;
  if (subject === 'log') return typeof e.l === 'number' && e.l >= (sub.level ?? DefaultLogLevel);
  const item = itemOf(subject, e);
  if (!item || !itemSelected(sub, item)) return false;
  if (subject === 'action' && sub.action_status?.length) {
    return sub.action_status.includes('#') || sub.action_status.includes(str(e.status));
  }
  return true;
}
