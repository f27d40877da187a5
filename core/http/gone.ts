import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The caller-gone signal of one HTTP request, for CallContext.signal: it
 * fires when the connection closes before the answer went out. Made on
 * first use — a call that never waits costs no controller and no listener.
 */
export function clientGone(req: IncomingMessage, res: ServerResponse): () => AbortSignal {
  let ctl: AbortController | undefined;
  return () => {
    if (ctl) return ctl.signal;
    const c = (ctl = new AbortController());
    if (req.socket.destroyed) c.abort();
    else res.once('close', () => { if (!res.writableFinished) c.abort(); });
    return c.signal;
  };
}
