import type { IncomingMessage } from 'node:http';
import type Busboy from 'busboy';
import { onFirstUse } from './lazy-module';

/** busboy reads multipart uploads only: loaded with the first one. */
const busboy = onFirstUse<typeof Busboy>('busboy');

/** Thrown when a request body is larger than the configured limit (answered 413). */
export class BodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`request body larger than ${limit} bytes`);
  }
}

/**
 * Read a whole request body into one buffer, then `done(undefined, raw)`;
 * `done(err)` for a body larger than `limit` (BodyTooLarge: before reading,
 * when Content-Length says so, or as soon as the bytes pass it) or a read
 * that fails. `done` is called once, and may be called before this returns.
 */
export function readBody(req: IncomingMessage, limit: number, done: (err: Error | undefined, raw: Buffer) => void): void {
  if (Number(req.headers['content-length']) > limit) {
    req.resume();
    done(new BodyTooLarge(limit), Empty);
    return;
  }
  let first: Buffer | undefined;
  let chunks: Buffer[] | undefined;
  let size = 0;
  let settled = false;
  // `on`, not `once`: a request ends once, and once's wrappers cost a hot call
  req.on('data', (c: Buffer) => {
    if (settled) return; // past the limit: the rest is read and dropped so the answer can be sent
    size += c.length;
    if (size > limit) {
      settled = true;
      done(new BodyTooLarge(limit), Empty);
    } else if (!first) first = c;
    else (chunks ??= [first]).push(c);
  });
  req.on('end', () => {
    if (settled) return;
    settled = true;
    done(undefined, chunks ? Buffer.concat(chunks, size) : first ?? Empty);
  });
  req.on('error', (err) => {
    if (settled) return;
    settled = true;
    done(err, Empty);
  });
}

/** the body of a request that sent none */
const Empty = Buffer.alloc(0);

/** The media type of a request, lower case, without parameters. */
export function mediaType(req: IncomingMessage): string {
  const ct = req.headers['content-type'];
  if (!ct) return '';
  // the forms clients send on every call, as they are: no split, trim or lower-casing per call
  if (ct === 'application/json' || ct === 'application/msgpack') return ct;
  return ct.split(';')[0].trim().toLowerCase();
}

/** Thrown for a multipart body busboy cannot read (answered 400). */
export class MalformedBody extends Error {}

/**
 * Read a multipart/form-data body into parameters, in memory: fields as
 * strings, and a file part as its text (file_put m), the first file of a
 * name counting. Nothing lands on disk, so no body — however broken, cut
 * short or refused — can leave a file or an open descriptor behind. Every
 * byte counts against `limit` (413 past it), so memory stays bounded too.
 */
export function readMultipart(req: IncomingMessage, limit: number): Promise<Record<string, string | string[]>> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) {
    req.resume();
    return Promise.reject(new BodyTooLarge(limit));
  }
  return new Promise((resolve, reject) => {
    let bb: Busboy.Busboy;
    try {
      bb = busboy()({ headers: req.headers, limits: { fieldSize: limit, fileSize: limit } });
    } catch (err) {
      req.resume();
      reject(new MalformedBody((err as Error).message)); // no boundary, or not multipart at all
      return;
    }
    // a repeated field is the list of its values, as in a query string or an urlencoded form
    const fields: Record<string, string | string[]> = {};
    const files: Record<string, string> = {};
    let size = 0;
    let done = false;
    const fail = (err: Error) => {
      if (done) return;
      done = true;
      req.unpipe(bb);
      req.off('data', count);
      req.resume(); // drain and drop the rest so the answer can be sent
      bb.destroy();
      reject(err);
    };
    const count = (c: Buffer) => {
      size += c.length;
      if (size > limit) fail(new BodyTooLarge(limit));
    };
    bb.on('field', (name, value) => {
      const had = fields[name];
      if (had === undefined) fields[name] = value;
      else if (Array.isArray(had)) had.push(value);
      else fields[name] = [had, value];
    });
    bb.on('file', (name, stream) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => { if (!(name in files)) files[name] = Buffer.concat(chunks).toString('utf8'); });
      stream.on('error', (err: Error) => fail(new MalformedBody(err.message)));
    });
    bb.on('error', (err) => fail(new MalformedBody((err as Error).message)));
    bb.on('close', () => {
      if (done) return;
      done = true;
      resolve({ ...fields, ...files });
    });
    req.on('data', count);
    req.once('error', (err) => fail(err));
    req.pipe(bb);
  });
}
