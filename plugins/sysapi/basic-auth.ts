/**
 * Credentials of an HTTP basic Authorization header ("Basic base64(user:password)"),
 * or undefined when the header is absent or not of that form.
 */
export function basicCredentials(headers: Record<string, string | string[] | undefined>): { user: string; password: string } | undefined {
  const h = headers.authorization;
  const value = Array.isArray(h) ? h[0] : h;
  const m = value ? /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(value) : null;
  if (!m) return undefined;
  const text = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon < 1) return undefined;
  return { user: text.slice(0, colon), password: text.slice(colon + 1) };
}
