import crypto from 'node:crypto';

/** Credentials remembered per address: a client rarely uses more keys and tokens from one place at once. */
export const KNOWN_PER_ADDRESS = 4;
/** How long a success is remembered (ms), counted from the last one: a client that calls at least hourly stays known. */
export const KNOWN_FOR = 3600_000;
/**
 * Shortest value remembered (as set_key_prop's minimum). A value answered
 * from this record is confirmed to whoever sends it from that address
 * without counting as a guess; for a value this long and random there is
 * nothing to find that way, a short one could be found from a dictionary.
 */
export const KNOWN_MIN_LENGTH = 16;
/** Longest value remembered: a longer one is never a record's, and costs nothing to turn away (no digest of it). */
export const KNOWN_MAX_LENGTH = 256;
/** Bytes one record takes besides its address: its digest (32) and time, with the array slot. */
const RECORD_BYTES = 32 + 8 + 8;
/** Bytes an address's entry takes besides its records and its name (map slot, object, array). */
const ADDRESS_BYTES = 64;

interface Known {
  digests: Buffer[];
  /** when each was last used with success (ms), same order */
  times: number[];
  last: number;
}

const remembered = (value: string) => value.length >= KNOWN_MIN_LENGTH && value.length <= KNOWN_MAX_LENGTH;
const digestOf = (value: string): Buffer => crypto.hash('sha256', value, 'buffer');

/**
 * Keys and tokens that passed from an address lately (by its throttle key:
 * an IPv4 address or an IPv6 /64), by their SHA-256 only. While the address
 * has as many wrong guesses booked as the throttle allows, a value recorded
 * here is still checked; any other value is refused unchecked. So a guesser
 * filling its address's bookings no longer locks out the clients that were
 * working from there (behind one NAT or reverse proxy: everyone), and a new
 * guess still learns nothing.
 *
 * Only a success makes a record, so nothing a caller without a valid key
 * sends adds to it; a lookup costs one digest of at most KNOWN_MAX_LENGTH
 * characters and KNOWN_PER_ADDRESS constant-time compares. Bounded:
 * `maxAddresses` addresses (the one whose last success is oldest makes
 * room), KNOWN_PER_ADDRESS values each (the one used longest ago makes
 * room), each forgotten KNOWN_FOR after its last success.
 */
export class KnownKeys {
  private readonly byAddress = new Map<string, Known>();
  private records = 0;
  private nameBytes = 0;

  constructor(private readonly maxAddresses: () => number, private readonly now: () => number = Date.now) {}

  /** Addresses with records now. */
  get addresses(): number {
    return this.byAddress.size;
  }

  /** Records now, all addresses together. */
  get size(): number {
    return this.records;
  }

  /** Memory the records take (bytes, an estimate from their fixed sizes). */
  get bytes(): number {
    return this.records * RECORD_BYTES + this.byAddress.size * ADDRESS_BYTES + this.nameBytes;
  }

  /** A value passed from the address: remember (or refresh) it. */
  passed(address: string, value: string): void {
    if (!remembered(value)) return;
    const d = digestOf(value);
    const now = this.now();
    let k = this.live(address, now);
    if (k) {
      this.byAddress.delete(address); // re-insert: the map stays ordered by last success
    } else {
      const max = Math.max(0, this.maxAddresses());
      if (max === 0) return;
      while (this.byAddress.size >= max) this.drop(this.byAddress.keys().next().value!);
      k = { digests: [], times: [], last: now };
      this.nameBytes += address.length * 2;
    }
    this.byAddress.set(address, k);
    k.last = now;
    const i = find(k, d);
    if (i >= 0) {
      k.times[i] = now;
      return;
    }
    if (k.digests.length >= KNOWN_PER_ADDRESS) {
      const oldest = k.times.indexOf(Math.min(...k.times));
      k.digests.splice(oldest, 1);
      k.times.splice(oldest, 1);
      this.records--;
    }
    k.digests.push(d);
    k.times.push(now);
    this.records++;
  }

  /** Did this value pass from the address lately? */
  has(address: string, value: string): boolean {
    if (this.byAddress.size === 0 || !remembered(value)) return false;
    const k = this.live(address, this.now());
    return !!k && find(k, digestOf(value)) >= 0;
  }

  /** Forget a value for the address (it no longer passes: revoked, expired, moved out of hosts_allow). */
  forget(address: string, value: string): void {
    const k = this.byAddress.get(address);
    if (!k || !remembered(value)) return;
    const i = find(k, digestOf(value));
    if (i < 0) return;
    k.digests.splice(i, 1);
    k.times.splice(i, 1);
    this.records--;
    if (k.digests.length === 0) this.drop(address);
  }

  /** The address's records, those older than KNOWN_FOR forgotten first. */
  private live(address: string, now: number): Known | undefined {
    const k = this.byAddress.get(address);
    if (!k) return undefined;
    if (now - k.last > KNOWN_FOR) {
      this.drop(address);
      return undefined;
    }
    for (let i = k.times.length - 1; i >= 0; i--) {
      if (now - k.times[i] <= KNOWN_FOR) continue;
      k.digests.splice(i, 1);
      k.times.splice(i, 1);
      this.records--;
    }
    return k;
  }

  private drop(address: string): void {
    const k = this.byAddress.get(address);
    if (!k) return;
    this.byAddress.delete(address);
    this.records -= k.digests.length;
    this.nameBytes -= address.length * 2;
  }
}

/** Index of the digest among the address's records, -1 when absent; every record is compared, in constant time. */
function find(k: Known, d: Buffer): number {
  let at = -1;
  for (let i = 0; i < k.digests.length; i++) if (crypto.timingSafeEqual(k.digests[i], d)) at = i;
  return at;
}
