import net from 'node:net';

/** A hostname as DNS writes it: labels of letters, digits and inner hyphens, dot separated. */
const HOSTNAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i;

/**
 * A listen address: `host:port`, `[v6 address]:port` or `:port` (every
 * address), port 0 to 65535 (0: any free port). The host is an address or a
 * host name (whether it is this machine's is known only when it binds).
 * A string says what is wrong.
 */
export function parseListenAddress(listen: string): { host: string; port: number } | string {
  const text = listen.trim();
  // the port follows the last colon: an IPv6 address without brackets keeps its own
  const m = /^\[([^\]]+)\]:([^:]*)$/.exec(text) ?? /^(.*):([^:]*)$/.exec(text);
  if (!m) return `"${text}" is not host:port`;
  const [, host, portText] = m;
  if (!/^\d+$/.test(portText) && net.isIPv6(text)) return `"${text}" has no port (an IPv6 address with a port is written [address]:port)`;
  if (!/^\d+$/.test(portText)) return `port "${portText}" of "${text}" is not a whole number`;
  const port = Number(portText);
  if (port > 65535) return `port ${port} of "${text}" is out of range (0 to 65535)`;
  if (text.startsWith('[') && !net.isIPv6(host)) return `"${host}" of "${text}" is not an IPv6 address`;
  if (host && !net.isIP(host) && !HOSTNAME.test(host)) {
    return net.isIPv6(text) ? `"${text}" has no port (an IPv6 address with a port is written [address]:port)`
      : `host "${host}" of "${text}" is neither an address nor a host name`;
  }
  return { host: host || '0.0.0.0', port };
}
