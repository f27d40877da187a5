import { accessDenied } from '../errors';
import { KeyStore, ResolvedKey } from './keys';

/**
 * Who is calling: the presented key (parameter k or X-Auth-Key, resolved by
 * the transport) or, without one, the key hosts_assign gives the address.
 * A presented key that is unknown, or used from an address outside its
 * hosts_allow, is refused (2 / 403) — never silently downgraded.
 */
export function authenticate(keys: KeyStore, presented: string | undefined, ip: string): ResolvedKey | undefined {
  if (presented === undefined || presented === '') {
    const key = keys.assigned(ip);
    return key ? { key, assigned: true } : undefined;
  }
  const found = keys.resolve(presented);
  if (!found) throw accessDenied('invalid key');
  if (!found.key.hostsAllow.has(ip)) throw accessDenied('key is not allowed from this address');
  return found;
}
