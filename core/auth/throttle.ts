import net from 'node:net';
import { normalizeIp } from './networks';

/**
 * The bits of an IPv6 address that name one client: a host is normally
 * given a whole /64, so counting its addresses one by one would hand it 2^64
 * fresh sets of free failures.
 */
const IPV6_CLIENT_PREFIX_GROUPS = 4; // 4 groups of 16 bits = /64

/** The 16-bit groups of an IPv6 address, with `::` expanded (an IPv4 tail counts as two). */
function ipv6Groups(addr: string): string[] {
  const part = (p: string) => (p ? p.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : []);
  const [head, tail] = addr.split('::');
  if (tail === undefined) return part(head);
  const h = part(head);
  const t = part(tail);
  return [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
}

/** Whose failures an attempt counts against: the IPv4 address, or the IPv6 /64 it comes from. */
export function throttleKey(ip: string): string {
  const a = normalizeIp(ip).split('%')[0]; // a zone id (fe80::1%eth0) names an interface, not a client
  if (!net.isIPv6(a)) return a;
  return `${ipv6Groups(a).slice(0, IPV6_CLIENT_PREFIX_GROUPS).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}

export interface ThrottleLimits {
  /** failures an address may make before it must wait */
  freeFailures: number;
  /** first wait, seconds; each further failure doubles it */
  delay: number;
  /** longest wait, seconds; an address's failures are forgotten this long after its last one */
  delayMax: number;
  /** most addresses remembered */
  maxClients: number;
}

interface Client { failures: number; inflight: number; until: number; last: number }

/**
 * Failed logins per client address. After `freeFailures` failures an address
 * must wait before its next attempt, the wait doubling with every further
 * failure up to `delayMax`; attempts during the wait are refused without
 * checking the credentials, so a password cannot be guessed faster than the
 * waits allow. Other addresses are not affected. An IPv6 client is counted
 * by its /64 (throttleKey): one host holds that many addresses.
 *
 * Attempts in progress count against the free failures, so a burst of
 * parallel guesses cannot all start before the first has failed. A success
 * does not wipe earlier failures (else a caller holding one valid credential
 * could reset the count between guesses): they are forgotten `delayMax`
 * after the last one.
 *
 * Memory is bounded: at `maxClients` addresses, forgotten ones are purged
 * first, then the address that failed longest ago makes room.
 */
export class LoginThrottle {
  private readonly clients = new Map<string, Client>();

  constructor(private readonly limits: () => ThrottleLimits, private readonly now: () => number = Date.now) {}

  /**
   * Start an attempt. Returns 0 and counts the attempt as in progress, or the
   * milliseconds the address must wait first (nothing counted). Every begin()
   * that returned 0 must be followed by end().
   */
  begin(address: string): number {
    const ip = throttleKey(address);
    const lim = this.limits();
    const now = this.now();
    let c = this.clients.get(ip);
    if (c && c.inflight === 0 && now - c.last > lim.delayMax * 1000) {
      this.clients.delete(ip); // an old failure streak is forgotten
      c = undefined;
    }
    if (c && c.until > now) return c.until - now;
    if (c && c.inflight > 0 && c.failures + c.inflight >= lim.freeFailures) return lim.delay * 1000;
    if (!c) {
      this.makeRoom(lim, now);
      c = { failures: 0, inflight: 0, until: 0, last: now };
      this.clients.set(ip, c);
    }
    c.inflight++;
    return 0;
  }

  /** End an attempt begun with begin(). */
  end(address: string, ok: boolean): void {
    const ip = throttleKey(address);
    const c = this.clients.get(ip);
    if (!c) return; // made room for others meanwhile
    c.inflight = Math.max(0, c.inflight - 1);
    if (ok) {
      if (c.failures === 0 && c.inflight === 0) this.clients.delete(ip);
      return;
    }
    this.failed(ip, c);
  }

  /**
   * Milliseconds the address must wait before its next attempt, 0 when it
   * need not; counts nothing. For checks that take no time (an API key), so
   * nothing is in progress: an address nobody failed from costs one lookup,
   * and none at all while no address has failed.
   */
  waiting(address: string): number {
    if (this.clients.size === 0) return 0;
    const c = this.clients.get(throttleKey(address));
    if (!c) return 0;
    const left = c.until - this.now();
    return left > 0 ? left : 0;
  }

  /** A failed check that was not begun with begin() (see waiting()). */
  fail(address: string): void {
    const ip = throttleKey(address);
    const lim = this.limits();
    const now = this.now();
    let c = this.clients.get(ip);
    if (c && c.inflight === 0 && now - c.last > lim.delayMax * 1000) {
      this.clients.delete(ip);
      c = undefined;
    }
    if (!c) {
      this.makeRoom(lim, now);
      c = { failures: 0, inflight: 0, until: 0, last: now };
    }
    this.failed(ip, c);
  }

  private failed(ip: string, c: Client): void {
    const lim = this.limits();
    const now = this.now();
    c.failures++;
    c.last = now;
    const over = c.failures - lim.freeFailures; // 0 at the last free failure: the next attempt waits `delay`
    if (over >= 0) c.until = now + Math.min(lim.delay * 2 ** Math.min(over, 30), lim.delayMax) * 1000;
    this.clients.delete(ip); // re-insert: the map stays ordered by last failure
    this.clients.set(ip, c);
  }

  /** Addresses remembered now. */
  get size(): number {
    return this.clients.size;
  }

  private makeRoom(lim: ThrottleLimits, now: number): void {
    if (this.clients.size < lim.maxClients) return;
    for (const [ip, c] of this.clients) {
      if (c.inflight === 0 && c.until <= now && now - c.last > lim.delayMax * 1000) this.clients.delete(ip);
    }
    // still full: the address that failed longest ago (the first in the map) makes room
    while (this.clients.size >= lim.maxClients) this.clients.delete(this.clients.keys().next().value!);
  }
}
