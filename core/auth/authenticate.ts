import { accessDenied } from '../errors';
import { KeyStore, ResolvedKey } from './keys';
import type { LoginThrottle } from './throttle';

/**
 * Who is calling: the presented key (parameter k or X-Auth-Key, resolved by
 * the transport) or, without one, the key hosts_assign gives the address.
 * A presented key that is unknown, or used from an address outside its
 * hosts_allow, is refused (2 / 403) — never silently downgraded — with one
 * answer for both, so a key cannot be confirmed from the wrong place.
 *
 * A refused key counts as a failure of the address in `throttle` (the login
 * throttle's rules): past its free failures the address waits, and its
 * checks are refused meanwhile without looking at the key.
 */
export function authenticate(keys: KeyStore, presented: string | undefined, ip: string, throttle?: LoginThrottle): ResolvedKey | undefined {
  if (presented === undefined || presented === '') {
    const key = keys.assigned(ip);
    return key ? { key, assigned: true } : undefined;
  }
  const wait = throttle?.waiting(ip) ?? 0;
  if (wait > 0) throw accessDenied(`too many failed key checks from this address, retry in ${Math.ceil(wait / 1000)} s`);
  const found = keys.resolve(presented);
  if (!found || !found.key.hostsAllow.has(ip)) {
    throttle?.fail(ip);
    throw accessDenied('invalid key');
  }
  return found;
}
