import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';

/**
 * Whether a request comes from a page of another origin, as the browser
 * says it: `Sec-Fetch-Site` other than same-origin or none (same-site is
 * another port, another origin), an `Origin` other than the request's own
 * (scheme and Host; `null` too), else a `Referer` of another origin. Such
 * a request never gets the key `hosts_assign` gives its address (cross-site
 * request forgery); clients that are not browsers send none of these.
 * `eitherScheme`: behind a proxy that ends TLS both schemes count as own.
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
