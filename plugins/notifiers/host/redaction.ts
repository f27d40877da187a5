/**
 * How a notifier's secrets are shown (get_notifier, list_notifiers, the
 * command line, error texts): that a password is set, never what it is.
 */

/** What a shown password reads (get_notifier, the CLI): that one is set, never what it is. */
export const HiddenPassword = '<hidden>';

/** A uri without its password (the file holds it; a screen or a pasted listing need not). */
export function shownUri(uri: unknown): string {
  const text = String(uri ?? '');
  try {
    const u = new URL(text);
    if (!u.password) return text;
    u.password = '';
    return u.toString();
  } catch {
    return text;
  }
}

/** Notifier fields as they are shown: a `password` set reads HiddenPassword, a `uri` loses its password. */
export function withoutSecrets(fields: Record<string, unknown>): Record<string, unknown> {
  const out = { ...fields };
  if (typeof out.password === 'string' && out.password) out.password = HiddenPassword;
  if (typeof out.uri === 'string') out.uri = shownUri(out.uri);
  return out;
}
