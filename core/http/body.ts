import type { IncomingMessage } from 'node:http';

/** Thrown when a request body is larger than the configured limit (answered 413). */
export class BodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`request body larger than ${limit} bytes`);
  }
}

/**
 * Read a whole request body into one buffer, refusing (before reading, when
 * Content-Length says so, or as soon as the bytes pass it) more than `limit`.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) {
    req.resume();
    return Promise.reject(new BodyTooLarge(limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        req.off('data', onData);
        req.resume(); // drain and drop the rest so the answer can be sent
        reject(new BodyTooLarge(limit));
        return;
      }
      chunks.push(c);
    };
    req.on('data', onData);
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
    req.once('error', reject);
  });
}

/** The media type of a request, lower case, without parameters. */
export function mediaType(req: IncomingMessage): string {
  const ct = req.headers['content-type'];
  return ct ? ct.split(';')[0].trim().toLowerCase() : '';
}
