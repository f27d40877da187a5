import type { ApiError } from '../errors';
import { rpcError, type RpcResponse } from '../rpc';
import { BatchAnswer } from './encode';

/**
 * A JSON RPC batch answer whose calls may hand over the write their answer
 * waits for (CallMeta.hold, CallContext.holdAnswer): the next call runs at
 * once, so the writes of the batch go to disk together, and the batch is
 * answered once every one of them settled. A failed write answers its
 * call's error in place of the result; the answer, encoded as the responses
 * came (BatchAnswer), is then made again from them (a rare path: the
 * responses are kept, the bytes are not patched).
 */
export class HeldBatch {
  private out: BatchAnswer;
  private readonly writes: { written: Promise<unknown>; at: number }[] = [];
  /** every response (or request not run), in order */
  private readonly log: ({ r: RpcResponse | undefined } | { notRun: unknown })[] = [];
  /** the write the call under way handed over */
  private writing?: Promise<unknown>;
  /** CallMeta.hold of the batch's calls */
  readonly hold = (written: Promise<unknown>): void => { this.writing = written; };

  constructor(private readonly packed: boolean, private readonly max: number) {
    this.out = new BatchAnswer(packed, max);
  }

  get full(): boolean {
    return this.out.full;
  }

  /** The response of the call just run (none for a notification, whose write is waited for too). */
  add(r: RpcResponse | undefined): void {
    if (this.writing) this.writes.push({ written: this.writing, at: r ? this.log.length : -1 });
    this.writing = undefined;
    this.log.push({ r });
    this.out.add(r);
  }

  notRun(req: unknown): void {
    this.log.push({ notRun: req });
    this.out.notRun(req);
  }

  /** The answer, once every write handed over settled. */
  async settled(): Promise<BatchAnswer> {
    if (!this.writes.length) return this.out;
    let failed = false;
    await Promise.all(this.writes.map(({ written, at }) => written.catch((err: unknown) => {
      if (at < 0) return;
      // the call's error (an ApiError: the dispatcher made it one) in place of its result
      const e = err as ApiError;
      const r = (this.log[at] as { r: RpcResponse }).r;
      this.log[at] = { r: rpcError(r.id, e.code, e.message) };
      failed = true;
    })));
    if (!failed) return this.out;
    this.out = new BatchAnswer(this.packed, this.max);
    for (const e of this.log) {
      if ('notRun' in e) this.out.notRun(e.notRun);
      else this.out.add(e.r);
    }
    return this.out;
  }
}
