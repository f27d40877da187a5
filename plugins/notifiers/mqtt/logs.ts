import type { Logger, LogRecord } from '../../../core/log';
import type { RepeatLog } from '../../../core/repeat-log';
import type { Connection } from './connection';
import type { MqttSettings } from './settings';
import { Topics } from './topics';
import { shown } from './inbound-messages';

const OWNER = 'logs';

/** A log record from another controller, checked field by field; undefined when it is not one. */
export function readRecord(text: string): LogRecord | undefined {
  let r: unknown;
  try { r = JSON.parse(text); } catch { return undefined; }
  if (!r || typeof r !== 'object' || Array.isArray(r)) return undefined;
  const o = r as Record<string, unknown>;
  const s = (v: unknown) => (typeof v === 'string' ? v : undefined);
  if (!Number.isInteger(o.l) || typeof o.t !== 'number' || !Number.isFinite(o.t) || s(o.msg) === undefined || s(o.h) === undefined) return undefined;
  return { h: o.h as string, l: o.l as number, mod: s(o.mod) ?? '', msg: o.msg as string, p: s(o.p) ?? '', t: o.t, th: s(o.th) ?? '' };
}

/**
 * collect_logs (spec rule 6): an aggregator takes the records other
 * controllers publish to SPACE/log into its own memory log, served by
 * log_get. They are kept without an event, so they are never sent on; the
 * controller's own records coming back from the broker are skipped.
 */
export class LogCollector {
  constructor(
    private readonly conn: Connection,
    private readonly s: MqttSettings,
    private readonly logger: Logger,
    private readonly self: { system: string; product: string },
    /** records refused: whoever can publish to the broker must not grow the log */
    private readonly refused: RepeatLog,
  ) {}

  start(): void {
    this.conn.routes.add(OWNER, Topics.log(this.s.prefix), this.s.qos.log, (_topic, payload) => this.onRecord(payload));
  }

  stop(): void {
    this.conn.routes.remove(OWNER);
  }

  private onRecord(payload: Buffer): void {
    const text = payload.toString('utf8');
    const rec = readRecord(text);
    if (!rec) {
      this.refused.note(`mqtt ${this.s.id}: log messages dropped (not a log record)`, '', `mqtt ${this.s.id}: log message ${shown(text)} dropped: not a log record`);
      return;
    }
    if (rec.h === this.self.system && rec.p === this.self.product) return;
    this.logger.keep(rec);
  }
}
