import type { Readable } from 'node:stream';

/**
 * Keeps the first `limit` bytes a stream writes and counts the rest without
 * keeping it. The stream is always read to its end, so a process writing more
 * than the limit never blocks on a full pipe; it just loses the excess.
 */
export class BoundedCapture {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  /** bytes the stream wrote past the limit (dropped) */
  dropped = 0;

  constructor(stream: Readable, private readonly limit: number) {
    stream.on('data', (chunk: Buffer) => this.add(chunk));
  }

  get truncated(): boolean {
    return this.dropped > 0;
  }

  private add(chunk: Buffer): void {
    const room = this.limit - this.kept;
    if (room <= 0) {
      this.dropped += chunk.length;
      return;
    }
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(part);
    this.kept += part.length;
    this.dropped += chunk.length - part.length;
  }

  /**
   * The text so far. A multi-byte character cut by the limit (or not yet
   * complete while the process runs) is left out rather than turned into a
   * replacement character; bytes that are not UTF-8 at all become U+FFFD.
   */
  text(complete: boolean): string {
    const buf = Buffer.concat(this.chunks, this.kept);
    return (complete && !this.truncated ? buf : buf.subarray(0, completeUtf8Length(buf))).toString('utf8');
  }
}

/** Length of `buf` without a trailing, incomplete UTF-8 sequence. */
export function completeUtf8Length(buf: Buffer): number {
  // a sequence is at most 4 bytes: look back at most 3 bytes for its lead byte
  for (let back = 1; back <= Math.min(3, buf.length); back++) {
    const b = buf[buf.length - back];
    if ((b & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? buf.length - back : buf.length;
  }
  return buf.length;
}
