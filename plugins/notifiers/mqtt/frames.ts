import crypto from 'node:crypto';

/**
 * The encrypted frames of the MQTT API as EVA ICS 3.3 controllers send
 * them; the API key is never in them, only its id. Both forms
 * authenticate before they decrypt, and compare MACs in constant time.
 *
 * Binary: `0x00 0x02 <key id> 0x00 <sealed>`; sealed = IV (16) + AES-256-CBC
 * (PKCS#7) + HMAC-SHA256 over IV and ciphertext (32); AES and HMAC key are
 * both the first 32 bytes of SHA-512(key value). The plaintext is a 16-byte
 * request id and the MessagePack request; the answer is `0x00 0xC8` and the
 * sealed MessagePack response.
 *
 * Text: `|<key id>|<Fernet token>`, the Fernet key being SHA-256(key value)
 * (bytes 0-15 sign, 16-31 encrypt, as the Fernet spec splits it). The
 * plaintext is `<call id>|<JSON request>`; the answer is `200|<token>`.
 */

/** A frame that is not one of ours, or does not authenticate: dropped, never answered. */
export class BadFrame extends Error {}

const MAC = 32;
const IV = 16;

function macOk(key: Buffer, data: Buffer, mac: Buffer): boolean {
  const want = crypto.createHmac('sha256', key).update(data).digest();
  return mac.length === MAC && crypto.timingSafeEqual(want, mac);
}

function cbc(alg: 'aes-256-cbc' | 'aes-128-cbc', key: Buffer, iv: Buffer, data: Buffer, encrypt: boolean): Buffer {
  const c = encrypt ? crypto.createCipheriv(alg, key, iv) : crypto.createDecipheriv(alg, key, iv);
  try {
    return Buffer.concat([c.update(data), c.final()]);
  } catch {
    // bad padding after a valid MAC: only the key's owner could have made it; still no details out
    throw new BadFrame('bad padding');
  }
}

/** The AES and HMAC key of binary frames for a key value. */
export function binaryKey(keyValue: string): Buffer {
  return crypto.createHash('sha512').update(keyValue).digest().subarray(0, 32);
}

export function seal(key: Buffer, plain: Buffer): Buffer {
  const iv = crypto.randomBytes(IV);
  const body = Buffer.concat([iv, cbc('aes-256-cbc', key, iv, plain, true)]);
  return Buffer.concat([body, crypto.createHmac('sha256', key).update(body).digest()]);
}

export function open(key: Buffer, sealed: Buffer): Buffer {
  if (sealed.length < IV + 16 + MAC || (sealed.length - IV - MAC) % 16) throw new BadFrame('bad length');
  const body = sealed.subarray(0, -MAC);
  if (!macOk(key, body, sealed.subarray(-MAC))) throw new BadFrame('MAC mismatch');
  return cbc('aes-256-cbc', key, body.subarray(0, IV), body.subarray(IV), false);
}

/** The key id and sealed part of a binary frame. */
export function splitBinary(frame: Buffer): { keyId: string; sealed: Buffer } {
  if (frame.length < 3 || frame[0] !== 0 || frame[1] !== 2) throw new BadFrame('not a binary frame of version 2');
  const end = frame.indexOf(0, 2);
  if (end < 3) throw new BadFrame('no key id');
  return { keyId: frame.subarray(2, end).toString('utf8'), sealed: frame.subarray(end + 1) };
}

/** The key id and token of a text frame. */
export function splitText(frame: string): { keyId: string; token: string } {
  const m = /^\|([^|]+)\|(.+)$/s.exec(frame);
  if (!m) throw new BadFrame('not a text frame');
  return { keyId: m[1], token: m[2] };
}

/** The Fernet key of text frames for a key value. */
export function fernetKey(keyValue: string): Buffer {
  return crypto.createHash('sha256').update(keyValue).digest();
}

/** A Fernet token (base64url with padding, as Python writes and reads it). */
export function fernetEncrypt(key: Buffer, plain: Buffer, now = Date.now()): string {
  const iv = crypto.randomBytes(IV);
  const head = Buffer.alloc(9);
  head[0] = 0x80;
  head.writeBigUInt64BE(BigInt(Math.floor(now / 1000)), 1);
  const body = Buffer.concat([head, iv, cbc('aes-128-cbc', key.subarray(16), iv, plain, true)]);
  const token = Buffer.concat([body, crypto.createHmac('sha256', key.subarray(0, 16)).update(body).digest()]);
  return token.toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
}

/** Check and open a Fernet token: its plaintext, its time (UNIX seconds) and its MAC (unique per token). */
export function fernetDecrypt(key: Buffer, token: string): { plain: Buffer; time: number; mac: Buffer } {
  if (!/^[A-Za-z0-9_-]+=*$/.test(token)) throw new BadFrame('not base64url');
  const raw = Buffer.from(token, 'base64url');
  if (raw.length < 9 + IV + 16 + MAC || (raw.length - 9 - IV - MAC) % 16 || raw[0] !== 0x80) throw new BadFrame('not a Fernet token');
  const body = raw.subarray(0, -MAC);
  const mac = raw.subarray(-MAC);
  if (!macOk(key.subarray(0, 16), body, mac)) throw new BadFrame('MAC mismatch');
  const plain = cbc('aes-128-cbc', key.subarray(16), body.subarray(9, 9 + IV), body.subarray(9 + IV), false);
  return { plain, time: Number(body.readBigUInt64BE(1)), mac };
}
