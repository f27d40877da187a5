import { bool, choice, seconds, text } from '../../core/schema';

/** `[server]` settings of plugin cluster (sysapi-keys reads them too: a shared db that did not start is not replaced by the file). */
export const ClusterSettings = {
  userdb: text('', 'a PostgreSQL database several controllers share for dynamic API keys and users: postgresql://user:password@host:port/database (EVA ICS 3.3.2\'s tables); empty: this controller\'s own runtime/db file'),
};

/** `[cluster]`: what else the controllers of one `[server] userdb` share, and how (sysapi-locks and sysapi-cvars read it too). */
export const ClusterSection = {
  cvars: choice('local', ['local', 'shared'], 'shared: the cvars are the fleet\'s, in table eva_cvars of [server] userdb (get_cvar answers from memory; set_cvar writes there first); local: this controller\'s own runtime file'),
  locks: choice('local', ['local', 'shared'], 'shared: lock, unlock, get_lock are one lock space across the controllers of [server] userdb, every grant with a fencing token; local: this controller\'s own locks'),
  eva33_passwords: bool(false, 'write passwords as EVA ICS 3.3.2 did (unsalted SHA-256), so that 3.3.2 controllers sharing the user db during a migration check them; no: scrypt, which 3.3.2 cannot check. Only while 3.3.2 controllers remain: SHA-256 is fast to guess from a copy of the table'),
  failover: bool(false, 'yes: the controllers of one [server] name on [server] userdb are a warm standby: one holds a lease in table eva_lease and is active, the others are standbys that refuse item, cvar and lock changes and unit actions (5 / 503) and take over when the lease ends'),
  lease: seconds(5, 'with failover: how long a lease grant lasts without renewal, by the database clock; a standby takes over at most this long (plus lease_renew) after the active stops renewing', 0.2),
  lease_renew: seconds(1, 'with failover: how often the active renews its lease (and a standby tries to take it); shorter than lease', 0.05),
  node: text('', 'with failover: this controller\'s name as lease holder (/health, the standby\'s refusals); empty: <host name>:<pid>'),
  token_cache: seconds(60, 'with [server] userdb: how long tokens held in memory keep working while the shared database is unreachable; past it they are refused until it is back', 1),
};

/**
 * The `[cluster]` values that need `[server] userdb`: a controller that
 * quietly kept its own would part from the fleet, so they are refused
 * (file:line, exit 3) without it.
 */
export const NeedsUserdb: Partial<Record<keyof typeof ClusterSection, (value: string) => boolean>> = {
  cvars: (v) => v === 'shared',
  locks: (v) => v === 'shared',
  eva33_passwords: (v) => /^(yes|true|on|1)$/i.test(v),
  failover: (v) => /^(true|yes|on|1|y|t)$/i.test(v),
};
