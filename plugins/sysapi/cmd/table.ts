import { busy } from '../../../core/errors';
import type { Command } from './command';

export interface TableLimits {
  /** commands running at once; one more is refused (busy) */
  maxRunning: number;
  /** finished results kept; past it the oldest finished is dropped */
  keepResults: number;
  /** seconds a finished result is kept */
  keepSeconds: number;
}

/**
 * The commands of one controller, by id: the running ones, and finished ones
 * for a while so `cmd_result` can still read them. Both are bounded; expired
 * results are dropped whenever the table is touched, so no timer is needed.
 */
export class CommandTable {
  private readonly byId = new Map<string, Command>();

  constructor(private readonly limits: TableLimits) {}

  running(): Command[] {
    return [...this.byId.values()].filter((c) => !c.finished);
  }

  /** Take a new command in, or refuse it when the running bound is reached. */
  add(c: Command): void {
    const n = this.running().length;
    if (n >= this.limits.maxRunning) throw busy(`${n} commands are running, the most allowed at once; try again later`);
    this.byId.set(c.id, c);
  }

  remove(id: string): void {
    this.byId.delete(id);
  }

  get(id: string): Command | undefined {
    this.purge();
    return this.byId.get(id);
  }

  /** Drop finished results that are too old, then the oldest past the count bound. */
  purge(now = Date.now()): void {
    const finished = [...this.byId.values()]
      .filter((c) => c.finished)
      .sort((a, b) => a.finishedAt! - b.finishedAt!);
    const expired = now - this.limits.keepSeconds * 1000;
    let excess = finished.length - this.limits.keepResults;
    for (const c of finished) {
      if (c.finishedAt! >= expired && excess <= 0) break;
      this.byId.delete(c.id);
      excess--;
    }
  }
}
