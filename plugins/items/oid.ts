import { invalidParams } from '../../core/errors';

export type ItemType = 'unit' | 'sensor' | 'lvar';

export const ItemTypes: readonly ItemType[] = ['unit', 'sensor', 'lvar'];

/**
 * One name segment of a group or an id. No leading dot, so `.` and `..` can
 * never be one (a unit id names its script file under xc/<product>/), and no
 * MQTT wildcards or separators (item names become topic levels).
 */
const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

export interface Oid { oid: string; type: ItemType; group: string; id: string; full_id: string }

/** Parse `type:group/id` (group may have several levels); throws invalid_params when malformed. */
export function parseOid(text: string): Oid {
  const m = /^([a-z]+):(.+)\/([^/]+)$/.exec(text);
  if (!m) throw invalidParams(`bad oid "${text}": expected type:group/id`);
  const [, type, group, id] = m;
  if (!ItemTypes.includes(type as ItemType)) throw invalidParams(`bad oid "${text}": type must be one of ${ItemTypes.join(', ')}`);
  if (!group.split('/').every((s) => SEGMENT.test(s))) throw invalidParams(`bad oid "${text}": malformed group`);
  if (!SEGMENT.test(id)) throw invalidParams(`bad oid "${text}": malformed id`);
  return { oid: text, type: type as ItemType, group, id, full_id: `${group}/${id}` };
}
