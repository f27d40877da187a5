/*
 * What the logged-in key may do, read from `test`'s acl (master, sysfunc,
 * allow, groups, items), so the console shows only the pages, buttons and
 * forms that can work; and the right a refused call lacked, in words.
 * The API decides in the end: this only keeps dead controls off the screen.
 */
'use strict';

/** The right a page needs: a permission of rpc.discover, or 'items' (some item in the key's lists). */
const PageNeeds = {
  overview: 'any', history: 'any', items: 'items', log: 'sysfunc', cmd: 'cmd', locks: 'lock',
  notifiers: 'master', keys: 'master', users: 'master', cvars: 'master',
};

/** Where a key lands: the first page of this order it may open. */
const Landing = ['overview', 'items', 'cmd', 'locks'];

/** A permission in words, as the operator would ask an administrator for it. */
function rightWords(permission) {
  switch (permission) {
    case 'master': return 'a master key';
    case 'sysfunc': return 'a key with sysfunc (or a master key)';
    case 'cmd': case 'lock': case 'device': return `a key whose allow has ${permission} (or a master key)`;
    case 'items': return 'a key with items or groups';
    default: return `the right ${permission}`;
  }
}

/** Does an item group pattern (MQTT wildcards) cover a group? As the controller decides (plugins/items/access.ts). */
function groupMatches(pattern, group) {
  if (pattern === '#') return true;
  const p = pattern.split('/'); const g = group.split('/');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '#') return i <= g.length;
    if (i >= g.length) return false;
    if (p[i] !== '+' && p[i] !== g[i]) return false;
  }
  return p.length === g.length;
}

const rights = {
  acl: {},
  /** function name -> permission, from rpc.discover, read at the first refusal */
  permissions: undefined,
  set(acl) { this.acl = acl || {}; },
  /** a permission of a function: any, master, sysfunc, cmd, lock, device; or items */
  has(permission) {
    const a = this.acl;
    if (a.master || permission === 'any') return true;
    if (permission === 'sysfunc') return !!a.sysfunc;
    if (permission === 'items') return ['groups', 'items', 'groups_ro', 'items_ro'].some((l) => (a[l] || []).length > 0);
    if (permission === 'master') return false;
    return !!(a.allow && a.allow[permission]);
  },
  page(name) { return this.has(PageNeeds[name] || 'master'); },
  /** an administrator lands on the overview; any other key on the first page of its own it can use */
  landing() { return this.has('sysfunc') ? 'overview' : Landing.find((p) => p !== 'overview' && this.page(p)) || 'overview'; },
  /** the controller's own rule for item writes: items/groups give it, the deny lists take it away */
  canWrite(oid) {
    const a = this.acl;
    if (a.master) return true;
    const full = oid.slice(oid.indexOf(':') + 1);
    const group = full.includes('/') ? full.slice(0, full.lastIndexOf('/')) : '';
    const listed = (items, groups) => (items || []).some((e) => e === '#' || e === oid || e === full) || (groups || []).some((p) => groupMatches(p, group));
    return !listed(a.items_deny, a.groups_deny) && listed(a.items, a.groups);
  },
  /** why a write of an item is refused, before trying: the right lacked, or '' */
  writeLacks(oid, unit) {
    if (unit && !this.has('device')) return `an action needs ${rightWords('device')}`;
    if (!this.canWrite(oid)) return `${unit ? 'an action' : 'setting a value'} needs write access to ${oid} (the key's items or groups, not the read-only ones)`;
    return '';
  },
  /** The right a refused call of `method` lacked, in words ('' when the function needs no special right). */
  async lacked(method) {
    if (!this.permissions) {
      try {
        const doc = await rpc('rpc.discover', {}, '');
        this.permissions = Object.fromEntries((doc.methods || []).map((m) => [m.name, m['x-permission']]));
      } catch {
        this.permissions = {};
      }
    }
    const p = this.permissions[method];
    return p && p !== 'any' && p !== 'none' && !this.has(p) ? `${method} needs ${rightWords(p)}` : '';
  },
};
