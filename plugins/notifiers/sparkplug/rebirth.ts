/** What becomes of a rebirth asked for by a command. */
export type RebirthAnswer = 'run' | 'coalesced' | 'limited';

/**
 * Rebirths asked for by commands (NCMD `Node Control/Rebirth`). Any client
 * of the broker can send them and each costs every birth of the node, so:
 * one asked for while another is queued and not begun joins it (a burst
 * during a rebirth makes at most one more), and at most `max` run in each
 * window of `windowMs` (counted from the first of the window); past that
 * they are refused. Constant memory.
 */
export class RebirthGate {
  /** a rebirth queued and not begun yet: later requests join it */
  private queued = false;
  private windowStart = 0;
  private inWindow = 0;

  constructor(private readonly max: number, private readonly windowMs: number) {}

  /** `run`: queue one and call `begun` as it begins. */
  ask(now: number): RebirthAnswer {
    if (this.queued) return 'coalesced';
    if (now - this.windowStart >= this.windowMs || now < this.windowStart) {
      this.windowStart = now;
      this.inWindow = 0;
    }
    if (this.inWindow >= this.max) return 'limited';
    this.inWindow++;
    this.queued = true;
    return 'run';
  }

  /** The queued rebirth begins: a request from now on asks for another. */
  begun(): void {
    this.queued = false;
  }
}
