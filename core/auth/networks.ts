import net from 'node:net';

/** An IPv4-mapped IPv6 address (::ffff:1.2.3.4) is the IPv4 address it carries. */
export function normalizeIp(ip: string): string {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  return m ? m[1] : ip;
}

/** most addresses whose answer a list remembers */
const CACHE_SIZE = 1024;

/**
 * A list of IPv4/IPv6 networks (CIDR or single addresses), matched with
 * node's BlockList. Throws on an entry that is not a network.
 */
export class NetworkList {
  private readonly list = new net.BlockList();
  readonly entries: string[];
  /** the list admits every address (0.0.0.0/0 or ::/0) */
  private readonly everywhere: boolean;
  /** recent answers by address: a check is on every call, and clients are few */
  private readonly cache = new Map<string, boolean>();

  constructor(entries: string[]) {
    this.entries = entries;
    this.everywhere = entries.some((e) => /^(0\.0\.0\.0|::)\/0$/.test(e.trim()));
    for (const e of entries) {
      const [addr, bits, extra] = e.split('/');
      const family = net.isIPv4(addr) ? 'ipv4' : net.isIPv6(addr) ? 'ipv6' : undefined;
      if (!family || extra !== undefined) throw new Error(`invalid network: ${e}`);
      if (bits === undefined) {
        this.list.addAddress(addr, family);
      } else {
        const prefix = Number(bits);
        const max = family === 'ipv4' ? 32 : 128;
        if (!/^\d+$/.test(bits) || prefix > max) throw new Error(`invalid network: ${e}`);
        this.list.addSubnet(addr, prefix, family);
      }
    }
  }

  has(ip: string | undefined): boolean {
    if (!ip || this.entries.length === 0) return false;
    let hit = this.cache.get(ip);
    if (hit === undefined) {
      hit = this.check(ip);
      if (this.cache.size >= CACHE_SIZE) this.cache.clear();
      this.cache.set(ip, hit);
    }
    return hit;
  }

  private check(ip: string): boolean {
    const a = normalizeIp(ip);
    const family = net.isIPv4(a) ? 'ipv4' : net.isIPv6(a) ? 'ipv6' : undefined;
    // a call whose address nobody knows (the MQTT API: it comes through a
    // broker) is admitted only by a list that admits every address
    return family ? this.list.check(a, family) : this.everywhere;
  }
}
