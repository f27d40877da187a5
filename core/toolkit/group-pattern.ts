/**
 * Group patterns as MQTT topic filters have them, for item groups (`a/b/c`):
 * `#` all groups, `a/#` a and every group below it, `+` any one level,
 * anything else the group itself. Both a key's `groups` and a notifier's
 * subscription select groups this way.
 */
export function groupMatches(pattern: string, group: string): boolean {
  if (pattern === '#' || pattern === group) return true;
  const p = pattern.split('/');
  const g = group.split('/');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '#') return true; // every level before matched, so `a/#` covers `a` itself too
    if (i >= g.length) return false;
    if (p[i] !== '+' && p[i] !== g[i]) return false;
  }
  return p.length === g.length;
}
