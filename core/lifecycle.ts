import { injectable } from 'tsyringe';

/**
 * How a plugin asks for the end of its controller (shutdown_core). Whoever
 * runs the controller decides what the end is: the process entry stops it
 * cleanly and exits (a supervisor or systemd starts it again); a controller
 * inside a test process simply stops.
 */
@injectable()
export class Lifecycle {
  private handler: (reason: string) => unknown = () => {};
  private requested = false;

  /** Set what a shutdown request does (the last setter wins). */
  onShutdown(fn: (reason: string) => unknown): void {
    this.handler = fn;
  }

  /**
   * Ask for a shutdown. It starts on a later turn of the event loop, so the
   * call that asked can still answer; the HTTP server lets answers in
   * flight finish before it closes. Later requests are ignored.
   */
  requestShutdown(reason: string): void {
    if (this.requested) return;
    this.requested = true;
    setImmediate(() => void this.handler(reason));
  }
}
