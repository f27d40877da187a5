import { ApiError } from '../errors';
import type { RepeatLog } from '../repeat-log';
import { KeyStore, ResolvedKey } from './keys';
import type { LoginThrottle } from './throttle';

/** A refused key; `hold`: how long its answer is held (the tarpit; 0: at once). */
export class KeyRefused extends ApiError {
  constructor(message: string, readonly hold = 0) {
    super('access_denied', message);
  }
}

/**
 * Who is calling: the presented key (parameter k or X-Auth-Key, resolved by
 * the transport) or, without one, the key hosts_assign gives the address.
 * A presented key that is unknown, or used from an address outside its
 * hosts_allow, is refused (2 / 403) — never silently downgraded — with one
 * answer for both, so a key cannot be confirmed from the wrong place.
 *
 * The key is checked first: a valid one passes at once. A refused one is
 * counted in `throttle` (LoginThrottle's rules: past the free failures its
 * answer is held; an address with too many guesses booked is refused
 * without its key being looked at) and in `refusals` (one log line per
 * interval, never the key). An address full of guesses still has its known
 * keys checked: a key or token that passed from it lately (a new value is
 * refused unchecked, so the guesser there learns nothing new).
 *
 * An expired key, a token of one, or a token past its lifetime, presented
 * from an address its key allows, is refused with a message saying it
 * expired and is not counted as a guess: the value is right, and a client
 * still sending it (a dashboard polling with a key that ran out) would
 * otherwise lock out everyone behind its address. Learning that a value
 * is an expired key gives a guesser nothing it can use.
 */
export function authenticate(
  keys: KeyStore, presented: string | undefined, ip: string, throttle?: LoginThrottle, refusals?: RepeatLog,
): ResolvedKey | undefined {
  if (presented === undefined || presented === '') {
    const key = keys.assigned(ip);
    return key ? { key, assigned: true } : undefined;
  }
  const wait = throttle?.locked(ip) ?? 0;
  if (wait > 0 && !throttle!.knows(ip, presented)) throw locked(ip, wait, refusals);
  // tokens that cannot be trusted now (a share's cache too old) are refused as such: no wrong guess is booked
  const stale = presented.startsWith('token:') ? keys.tokens.refusal() : undefined;
  if (stale) throw new KeyRefused(stale);
  const found = keys.resolve(presented);
  if (found && found.key.hostsAllow.has(ip)) {
    throttle?.passed(ip, presented);
    return found;
  }
  // right once, but its time is over: said so (from where the key may be used), and not counted as a guess
  const expired = found ? undefined : keys.expired(presented);
  if (expired && expired.key.hostsAllow.has(ip)) {
    refusals?.note('expired API keys or tokens refused', ip);
    throw new KeyRefused(expired.message);
  }
  if (wait > 0) {
    // known here, but no longer valid (revoked, expired, outside hosts_allow now): the answer of any other value
    throttle!.unknown(ip, presented);
    throw locked(ip, wait, refusals);
  }
  refusals?.note('wrong API keys refused', ip);
  throw new KeyRefused('invalid key', throttle?.failed(ip, presented) ?? 0);
}

/** The refusal of an address with too many wrong keys booked: its key not looked at, nothing counted. */
function locked(ip: string, wait: number, refusals?: RepeatLog): KeyRefused {
  refusals?.note('API keys refused unchecked (too many wrong ones booked)', ip);
  return new KeyRefused(`too many failed key checks from this address, retry in ${Math.ceil(wait / 1000)} s`);
}
