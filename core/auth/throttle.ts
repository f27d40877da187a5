import net from 'node:net';
import crypto from 'node:crypto';
import { normalizeIp } from './networks';
import { KnownKeys } from './known-keys';

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
  /** wrong guesses an address may make before they are counted against time */
  freeFailures: number;
  /** first step, seconds; each further wrong guess doubles it */
  delay: number;
  /** longest step, seconds; an address's failures are forgotten this long after its last one */
  delayMax: number;
  /** most addresses remembered */
  maxClients: number;
  /** wrong guesses an address may have booked ahead past its free failures; then it is refused unchecked */
  pendingMax: number;
  /** late answers held at once, all addresses together; past it wrong guesses are answered at once */
  waitingMax: number;
}

/** Wrong values an address sent lately (short digests), so a repeat costs nothing. */
const RECENT = 8;

interface Client {
  /** distinct wrong guesses since the streak began */
  failures: number;
  /** checks under way (login: a password being hashed) */
  inflight: number;
  /** when each booked wrong guess is answered (ms), ascending */
  booked: number[];
  recent: string[];
  /** last failure or last booked answer */
  last: number;
}

/** A short digest of a guessed value: enough to tell recent guesses apart, never the value itself. */
export const guessDigest = (value: string): string => crypto.hash('sha256', value, 'hex').slice(0, 16);

/**
 * Guessing of keys and passwords, per client address (an IPv6 client by its
 * /64: throttleKey). The credential is checked first: a valid one passes at
 * full speed. Wrong ones are what is bounded:
 *
 * - the same wrong value again (a script with a stale key, a key used from
 *   outside its hosts_allow) tells the sender nothing new: refused at once,
 *   not counted, so it never slows anyone;
 * - the first `freeFailures` distinct wrong values are refused at once;
 * - each further one is booked one step after the previous booking (steps
 *   double from `delay` to `delayMax`) and its answer is held until then
 *   (a tarpit);
 * - an address with `pendingMax` bookings still ahead (checks under way
 *   count) is refused without its credential being checked, until the first
 *   booking is due.
 *
 * Why the last rule is before the check: a valid credential is answered at
 * once, so an answer that does not come at once already says "wrong", and a
 * late answer by itself slows only a guesser that waits for it. What bounds
 * guessing is the number of distinct values checked: `freeFailures +
 * pendingMax` at once, then one per step — what the old lockout allowed —
 * while valid credentials from the address pass until a guesser there has
 * `pendingMax` guesses booked.
 *
 * What a guesser at an address full of bookings cannot take from the
 * clients working beside it (one NAT, one reverse proxy): a key or token
 * that passed from the address lately is still checked there (`known`,
 * KnownKeys); any other value, a new guess, is refused unchecked.
 *
 * Memory is bounded: at most `maxClients` addresses (forgotten ones purged
 * first, then the one that failed longest ago), RECENT digests and
 * `pendingMax` bookings each, and `waitingMax` held answers in all; as
 * many addresses of known keys (KnownKeys' bounds).
 */
export class LoginThrottle {
  private readonly clients = new Map<string, Client>();
  /** answers held now (all addresses) */
  private held = 0;
  /** keys and tokens that passed lately, per address (throttleKey): checked even while the address is full */
  readonly known: KnownKeys;

  constructor(private readonly limits: () => ThrottleLimits, private readonly now: () => number = Date.now) {
    this.known = new KnownKeys(() => this.limits().maxClients, now);
  }

  /** A key or token passed from the address: it stays checked there while the address is full of guesses. */
  passed(address: string, value: string): void {
    this.known.passed(throttleKey(address), value);
  }

  /** Did this value pass from the address lately (so it is checked even while locked() says wait)? */
  knows(address: string, value: string): boolean {
    return this.known.has(throttleKey(address), value);
  }

  /** A value that passed from the address no longer does: forget it there. */
  unknown(address: string, value: string): void {
    this.known.forget(throttleKey(address), value);
  }

  /** Answers held now, all addresses together. */
  get waiting(): number {
    return this.held;
  }

  /** Addresses remembered now. */
  get size(): number {
    return this.clients.size;
  }

  /**
   * Milliseconds until the address may be checked again, 0 when it may now:
   * it has `pendingMax` bookings ahead. Counts nothing (a check that takes no
   * time: an API key). Costs nothing while no address has failed.
   */
  locked(address: string): number {
    if (this.clients.size === 0) return 0;
    const c = this.live(throttleKey(address));
    return c ? this.wait(c) : 0;
  }

  /**
   * Start a check that takes time (a password): 0 and the check counts as
   * under way, or the milliseconds the address must wait (nothing counted,
   * the credential must not be checked). A 0 must be followed by end().
   */
  begin(address: string): number {
    const ip = throttleKey(address);
    let c = this.live(ip);
    if (c) {
      const w = this.wait(c);
      if (w > 0) return w;
    } else {
      c = this.create(ip);
    }
    c.inflight++;
    return 0;
  }

  /** End a check begun with begin(): as failed() when it was wrong (`value`: what was guessed). */
  end(address: string, ok: boolean, value: string): number {
    const c = this.clients.get(throttleKey(address));
    if (c) c.inflight = Math.max(0, c.inflight - 1);
    if (ok) {
      if (c && c.failures === 0 && c.inflight === 0) this.clients.delete(throttleKey(address));
      return 0;
    }
    return this.failed(address, value);
  }

  /**
   * A wrong value from the address. Returns how long to hold the answer (ms;
   * 0: answer at once).
   */
  failed(address: string, value: string): number {
    const ip = throttleKey(address);
    const lim = this.limits();
    const now = this.now();
    const c = this.live(ip) ?? this.create(ip);
    const d = guessDigest(value);
    if (c.recent.includes(d)) return 0; // nothing new for the sender
    c.recent.push(d);
    if (c.recent.length > RECENT) c.recent.shift();
    c.failures++;
    c.last = Math.max(c.last, now);
    this.clients.delete(ip); // re-insert: the map stays ordered by last failure
    this.clients.set(ip, c);
    const over = c.failures - lim.freeFailures - 1;
    if (over < 0) return 0;
    const step = Math.min(lim.delay * 2 ** Math.min(over, 30), lim.delayMax) * 1000;
    const due = Math.max(now, c.booked.at(-1) ?? now) + step;
    c.booked.push(due);
    c.last = Math.max(c.last, due);
    return Math.min(due - now, lim.delayMax * 1000);
  }

  /**
   * Hold a wrong answer `ms` (failed()'s figure). Resolves at once when
   * `waitingMax` answers are held already: the guess stays booked, only the
   * courtesy of a late answer is skipped.
   */
  hold(ms: number): Promise<void> {
    if (ms <= 0 || this.held >= this.limits().waitingMax) return Promise.resolve();
    this.held++;
    return new Promise((resolve) => {
      // unref: a held answer never keeps a stopping controller alive
      setTimeout(() => { this.held--; resolve(); }, ms).unref();
    });
  }

  /** The address's record, unless its streak is over (then it is forgotten). */
  private live(ip: string): Client | undefined {
    const c = this.clients.get(ip);
    if (!c) return undefined;
    const lim = this.limits();
    const now = this.now();
    while (c.booked.length && c.booked[0] <= now) c.booked.shift();
    if (c.inflight === 0 && c.booked.length === 0 && now - c.last > lim.delayMax * 1000) {
      this.clients.delete(ip);
      return undefined;
    }
    return c;
  }

  /** ms until the address may be checked again (its record pruned by live()). */
  private wait(c: Client): number {
    const lim = this.limits();
    const used = Math.min(c.failures, lim.freeFailures) + c.booked.length + c.inflight;
    if (used < lim.freeFailures + Math.max(1, lim.pendingMax)) return 0;
    return c.booked.length ? Math.max(1, c.booked[0] - this.now()) : Math.max(1, lim.delay * 1000);
  }

  private create(ip: string): Client {
    const lim = this.limits();
    const now = this.now();
    if (this.clients.size >= lim.maxClients) this.makeRoom(lim, now);
    const c: Client = { failures: 0, inflight: 0, booked: [], recent: [], last: now };
    this.clients.set(ip, c);
    return c;
  }

  private makeRoom(lim: ThrottleLimits, now: number): void {
    for (const [ip, c] of this.clients) {
      if (c.inflight === 0 && (c.booked.at(-1) ?? 0) <= now && now - c.last > lim.delayMax * 1000) this.clients.delete(ip);
    }
    // still full: the address that failed longest ago (the first in the map) makes room
    while (this.clients.size >= lim.maxClients) this.clients.delete(this.clients.keys().next().value!);
  }
}

/** The limits of [webapi] login_*, read at each use (a reload changes them). */
export function webapiLimits(w: {
  login_free_failures: number; login_delay: number; login_delay_max: number; login_clients_max: number;
  login_pending_max: number; login_waiting_max: number;
}): () => ThrottleLimits {
  return () => ({
    freeFailures: w.login_free_failures, delay: w.login_delay, delayMax: w.login_delay_max, maxClients: w.login_clients_max,
    pendingMax: w.login_pending_max, waitingMax: w.login_waiting_max,
  });
}
