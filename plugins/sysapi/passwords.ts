import crypto from 'node:crypto';
import { busy } from '../../core/errors';
import { bound, int, defaults } from '../../core/schema';

/**
 * Password hashes of user accounts. New ones are node's scrypt with a random
 * salt, stored self-describing so the cost can be raised later without
 * breaking stored hashes:
 *   $scrypt$ln=<log2 N>,r=<r>,p=<p>$<salt, base64>$<hash, base64>
 * A bare 64-hex string is an unsalted SHA-256 from a user db of EVA ICS 3.3:
 * accepted, and reported as needing an upgrade so the caller rewrites it.
 * Only `login` and the user functions of this plugin check passwords; the
 * kernel never does.
 */
export const PasswordLimits = {
  ln: int(15, 'log2 of scrypt\'s N: 2^15 takes ~0.1 s and 32 MiB, slow enough to make guessing costly', { min: 1 }),
  r: int(8, 'scrypt block size (r)', { min: 1 }),
  p: int(1, 'scrypt parallel passes (p)', { min: 1 }),
  saltBytes: bound(16, 'bytes of a new salt', 'bytes'),
  hashBytes: bound(32, 'bytes of a hash', 'bytes'),
  maxCost: bound(64 * 1024 * 1024, 'Highest cost accepted from a stored string, as 128·N·r·p bytes: the memory of one check (128·N·r) times its parallel passes (p), so it bounds the memory and the time of a login. A forged db row beyond it never matches, rather than make a login eat gigabytes. Twice today\'s cost.', 'bytes'),
  running: bound(1, 'Hashes computed at once. scrypt runs on libuv\'s thread pool (4 threads), the pool every file write uses too, and keeps a core busy for its whole time: one at a time leaves the writes and the event loop room, whatever a login flood sends.'),
  queued: bound(16, 'Hashes waiting for their turn; one more is refused at once (13 / 409), not queued without end.'),
};

export const PasswordDefaults = defaults(PasswordLimits);

/** The hashes running now, and the ones waiting in order. */
let running = 0;
const waiting: (() => void)[] = [];

/** Run one hash when its turn comes: at most `running` at once, at most `queued` waiting. */
async function hashTurn<T>(work: () => Promise<T>): Promise<T> {
  if (running >= PasswordDefaults.running) {
    if (waiting.length >= PasswordDefaults.queued) throw busy('too many password checks at once, retry later');
    await new Promise<void>((resolve) => waiting.push(resolve));
  } else {
    running++;
  }
  try {
    return await work();
  } finally {
    // the turn passes straight to the next waiter (running stays counted), or is given back
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}

/** 128·N·r·p: what one check with these parameters costs in memory × passes. */
const costOf = ({ ln, r, p }: { ln: number; r: number; p: number }) => 128 * 2 ** ln * r * p;

const PREFIX = '$scrypt$';
const LEGACY_SHA256 = /^[0-9a-f]{64}$/i;

interface Params { ln: number; r: number; p: number }

function scrypt(password: string, salt: Buffer, length: number, { ln, r, p }: Params): Promise<Buffer> {
  const N = 2 ** ln;
  return hashTurn(() => new Promise((resolve, reject) => {
    // maxmem: scrypt needs 128 * N * r bytes; node's default cap is 32 MiB
    crypto.scrypt(password, salt, length, { N, r, p, maxmem: 256 * N * r + 1024 * 1024 }, (err, key) =>
      err ? reject(err) : resolve(key));
  }));
}

/** A new salted hash of `password`. */
export async function hashPassword(password: string): Promise<string> {
  const d = PasswordDefaults;
  const salt = crypto.randomBytes(d.saltBytes);
  const hash = await scrypt(password, salt, d.hashBytes, d);
  return `${PREFIX}ln=${d.ln},r=${d.r},p=${d.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

/**
 * The hash EVA ICS 3.3.2 stored: SHA-256 of the password, 64 hex digits,
 * unsalted. Written only for a user db shared with 3.3.2 controllers
 * (`[cluster] eva33_passwords`), which check nothing else.
 */
export function eva33Hash(password: string): string {
  return crypto.createHash('sha256').update(password).digest('hex');
}

function parseScrypt(stored: string): { params: Params; salt: Buffer; hash: Buffer } | undefined {
  const m = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+)$/.exec(stored);
  if (!m) return undefined;
  const params = { ln: Number(m[1]), r: Number(m[2]), p: Number(m[3]) };
  if (params.ln < 1 || params.r < 1 || params.p < 1 || costOf(params) > PasswordDefaults.maxCost) return undefined;
  const hash = Buffer.from(m[5], 'base64');
  if (hash.length < 16) return undefined;
  return { params, salt: Buffer.from(m[4], 'base64'), hash };
}

export interface Verdict {
  ok: boolean;
  /** the stored form is outdated (legacy SHA-256, or a lower cost than today's): rewrite it */
  upgrade: boolean;
}

/**
 * Check a password against a stored hash, in constant time for the compare.
 * An unknown stored form never matches.
 */
export async function verifyPassword(password: string, stored: string): Promise<Verdict> {
  if (LEGACY_SHA256.test(stored)) {
    const given = crypto.createHash('sha256').update(password).digest();
    const ok = crypto.timingSafeEqual(given, Buffer.from(stored, 'hex'));
    return { ok, upgrade: ok };
  }
  const parsed = parseScrypt(stored);
  if (!parsed) {
    await dummyVerify(password); // the same time as a real check: the answer must not tell the form apart
    return { ok: false, upgrade: false };
  }
  const given = await scrypt(password, parsed.salt, parsed.hash.length, parsed.params);
  const ok = crypto.timingSafeEqual(given, parsed.hash);
  const d = PasswordDefaults;
  return { ok, upgrade: ok && (parsed.params.ln < d.ln || parsed.params.r < d.r) };
}

/** Spend the time of one check: used for unknown users so their absence does not answer faster. */
export async function dummyVerify(password: string): Promise<void> {
  await scrypt(password, Buffer.alloc(PasswordDefaults.saltBytes), PasswordDefaults.hashBytes, PasswordDefaults);
}
