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

/**
 * Notifier fields as they are shown: a secret set (`password`, and the
 * settings a type declares secret) reads HiddenPassword, a `uri` loses its password.
 */
export function withoutSecrets(fields: Record<string, unknown>, type?: { settings: Record<string, { secret?: boolean }> }): Record<string, unknown> {
  const out = { ...fields };
  const secrets = ['password', ...Object.entries(type?.settings ?? {}).filter(([, d]) => d.secret).map(([name]) => name)];
  for (const name of secrets) if (typeof out[name] === 'string' && out[name]) out[name] = HiddenPassword;
  if (typeof out.uri === 'string') out.uri = shownUri(out.uri);
  return out;
}
