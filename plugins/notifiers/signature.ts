import crypto from 'node:crypto';

/**
 * Web hook signatures in the Standard Webhooks form, so a receiver can check
 * who sent a frame, that its body is untouched and that it is fresh:
 *
 *   webhook-id:        unique per frame, the same on every retry (receivers dedupe by it)
 *   webhook-timestamp: seconds since the epoch, of this try
 *   webhook-signature: "v1,<base64 HMAC-SHA256 of '<id>.<timestamp>.<payload>'>",
 *                      space-separated when two secrets sign (a rotation)
 *
 * A secret is written as Standard Webhooks writes it, `whsec_` + base64; the
 * HMAC key is the decoded bytes. The payload is the request body (for the
 * GET-only `http` type, which has none, its query string).
 */

/** Standard Webhooks' secret sizes: 24 to 64 random bytes. */
const SECRET_BYTES = { min: 24, max: 64 };
const PREFIX = 'whsec_';

/** The HMAC key of a `whsec_` secret; throws with a message that never contains the secret. */
export function secretKey(secret: unknown, name: string): Buffer {
  if (typeof secret !== 'string' || !secret.startsWith(PREFIX)) throw new Error(`${name} must be whsec_ followed by base64`);
  const text = secret.slice(PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) || text.length % 4 !== 0) throw new Error(`${name} must be whsec_ followed by base64`);
  const key = Buffer.from(text, 'base64');
  if (key.length < SECRET_BYTES.min || key.length > SECRET_BYTES.max) {
    throw new Error(`${name} must hold ${SECRET_BYTES.min} to ${SECRET_BYTES.max} bytes (it holds ${key.length})`);
  }
  return key;
}

/** A new secret in the `whsec_` form (32 random bytes). */
export function newSecret(): string {
  return PREFIX + crypto.randomBytes(32).toString('base64');
}

/** The signature header value: one `v1,` entry per key. */
export function signature(keys: readonly Buffer[], id: string, timestamp: number, payload: string): string {
  const content = `${id}.${timestamp}.${payload}`;
  return keys.map((key) => `v1,${crypto.createHmac('sha256', key).update(content).digest('base64')}`).join(' ');
}

/** A new frame id: `msg_` and 16 random bytes, base64url. */
export function frameId(): string {
  return `msg_${crypto.randomBytes(16).toString('base64url')}`;
}

/**
 * The keys that sign now: the current secret, and the previous one until
 * its grace time ends (`previousUntil`, seconds since the epoch; absent: it
 * signs until the setting is removed).
 */
export function signingKeys(current: Buffer | undefined, previous: Buffer | undefined, previousUntil: number | undefined, now: number): Buffer[] {
  const keys: Buffer[] = [];
  if (current) keys.push(current);
  if (previous && (previousUntil === undefined || now < previousUntil)) keys.push(previous);
  return keys;
}
