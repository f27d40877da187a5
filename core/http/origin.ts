import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';

/**
 * Whether a request comes from a page of another origin, as the browser
 * says it: `Sec-Fetch-Site` other than same-origin or none (same-site too:
 * a page on another port of the same host is another origin), an `Origin`
 * other than the request's own (scheme and Host header; `null` included),
 * else a `Referer` of another origin. Such a request never gets the key
 * `hosts_assign` gives its address: a page open in a browser on that host
 * could otherwise run functions with it (cross-site request forgery).
 * Clients that are not browsers send none of these headers.
 *
 * `eitherScheme`: behind a proxy that ends TLS (x_real_ip), the scheme the
 * browser used is not the socket's, so both count as own.
 */
export function foreignOrigin(req: IncomingMessage, eitherScheme: boolean): boolean {
  const h = req.headers;
  const site = h['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return true;
  const origin = h.origin;
  if (origin !== undefined) return !isOwn(origin.toLowerCase(), req, eitherScheme, false);
  const referer = h.referer;
  return referer !== undefined && !isOwn(referer.toLowerCase(), req, eitherScheme, true);
}

/** `url` is of this server's origin: exactly it (an Origin), or a URL under it (a Referer). */
function isOwn(url: string, req: IncomingMessage, eitherScheme: boolean, under: boolean): boolean {
  const host = req.headers.host?.toLowerCase();
  if (!host) return false;
  const tls = (req.socket as TLSSocket).encrypted === true;
  const schemes = eitherScheme ? ['http', 'https'] : [tls ? 'https' : 'http'];
  return schemes.some((s) => {
    const own = `${s}://${host}`;
    return url === own || (under && url.startsWith(`${own}/`));
  });
}
