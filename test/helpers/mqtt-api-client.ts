import crypto from 'node:crypto';
import { encode } from '@msgpack/msgpack';

/*
 * A 3.3 MQTT API client written here from the protocol description alone
 * (node:crypto), not from the controller's code: what a 3.3 LM or SFA sends.
 */

/** pyaltt2.crypto with hmac_key=True: h = SHA-512(key); AES key h[:32], HMAC key h[:-32] (the same 32 bytes). */
export function seal33(keyValue: string, plain: Buffer): Buffer {
  const h = crypto.createHash('sha512').update(keyValue).digest();
  const iv = crypto.randomBytes(16);
  const c = crypto.createCipheriv('aes-256-cbc', h.subarray(0, 32), iv);
  const body = Buffer.concat([iv, c.update(plain), c.final()]);
  return Buffer.concat([body, crypto.createHmac('sha256', h.subarray(0, h.length - 32)).update(body).digest()]);
}

export function open33(keyValue: string, sealed: Buffer): Buffer {
  const h = crypto.createHash('sha512').update(keyValue).digest();
  const mac = crypto.createHmac('sha256', h.subarray(0, 32)).update(sealed.subarray(0, -32)).digest();
  if (!mac.equals(sealed.subarray(-32))) throw new Error('answer MAC mismatch');
  const d = crypto.createDecipheriv('aes-256-cbc', h.subarray(0, 32), sealed.subarray(0, 16));
  return Buffer.concat([d.update(sealed.subarray(16, -32)), d.final()]);
}

/** CoreAPIClient.do_call_mqtt: 0x00 0x02 key_id 0x00 seal(request id (16) + msgpack(payload)). */
export function binaryFrame(keyId: string, keyValue: string, rid: Buffer, payload: unknown): Buffer {
  return Buffer.concat([Buffer.from([0, 2]), Buffer.from(keyId), Buffer.from([0]), seal33(keyValue, Buffer.concat([rid, Buffer.from(encode(payload))]))]);
}

/** Fernet(base64(SHA-256(key))): signing key bytes 0-15, AES-128 key 16-31; token url-safe base64 with padding. */
export function fernet33(keyValue: string, plain: string, time = Math.floor(Date.now() / 1000)): string {
  const key = crypto.createHash('sha256').update(keyValue).digest();
  const head = Buffer.alloc(9);
  head[0] = 0x80;
  head.writeBigUInt64BE(BigInt(time), 1);
  const iv = crypto.randomBytes(16);
  const c = crypto.createCipheriv('aes-128-cbc', key.subarray(16), iv);
  const body = Buffer.concat([head, iv, c.update(plain), c.final()]);
  const token = Buffer.concat([body, crypto.createHmac('sha256', key.subarray(0, 16)).update(body).digest()]);
  return token.toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
}
