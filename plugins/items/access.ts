import type { ApiKey } from '../../core/auth/apikey';
import type { Oid } from './oid';
import { groupMatches } from '../../core/toolkit/group-pattern';

/**
 * Which items a key reaches, from its lists (plugins/items/README.md):
 * `items` / `groups` give read and write, `items_ro` / `groups_ro` read only,
 * `items_deny` / `groups_deny` take away whatever the others gave. An items
 * entry is an oid (`unit:g/id`), a full id (`g/id`) or `#` for all; a groups
 * entry is a group with MQTT-style wildcards: `#` all, `a/#` a and below,
 * `+` one level. A master key reaches everything.
 */

function listed(items: string[], groups: string[], o: Oid): boolean {
  return items.some((e) => e === '#' || e === o.oid || e === o.full_id) || groups.some((p) => groupMatches(p, o.group));
}

function denied(key: ApiKey, o: Oid): boolean {
  return listed(key.lists.items_deny, key.lists.groups_deny, o);
}

export function canWrite(key: ApiKey | undefined, o: Oid): boolean {
  if (!key) return false;
  if (key.master) return true;
  return !denied(key, o) && listed(key.lists.items, key.lists.groups, o);
}

export function canRead(key: ApiKey | undefined, o: Oid): boolean {
  if (!key) return false;
  if (key.master) return true;
  if (denied(key, o)) return false;
  return listed(key.lists.items, key.lists.groups, o) || listed(key.lists.items_ro, key.lists.groups_ro, o);
}

/** Could a group pattern match `group` or a group below it? */
function reaches(pattern: string, group: string): boolean {
  const p = pattern.split('/');
  const g = group === '' ? [] : group.split('/');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '#' || i >= g.length) return true; // past the group's levels: a group below may match
    if (p[i] !== '+' && p[i] !== g[i]) return false;
  }
  return p.length >= g.length;
}

/**
 * May the key read every item of `type` in `group` and below (a mask
 * `type:group/#`; group '' for `type:#`)? The key must hold the whole group
 * (`#`, or a `g/#` pattern above it), and nothing under it may be denied.
 */
export function canReadAll(key: ApiKey | undefined, type: string, group: string): boolean {
  if (!key) return false;
  if (key.master) return true;
  const l = key.lists;
  const whole = [...l.groups, ...l.groups_ro].some((p) => p === '#' || (p.endsWith('/#') && groupMatches(p, group) && group !== ''));
  const items = [...l.items, ...l.items_ro].includes('#');
  if (!whole && !items) return false;
  if (l.groups_deny.some((p) => reaches(p, group))) return false;
  return !l.items_deny.some((e) => {
    if (e === '#') return true;
    const full = e.includes(':') ? (e.startsWith(`${type}:`) ? e.slice(type.length + 1) : undefined) : e;
    return full !== undefined && (group === '' || full.startsWith(`${group}/`));
  });
}
