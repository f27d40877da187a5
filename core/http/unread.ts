import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** A connection's requests that wait, and its answers made but not yet handed to the socket. */
interface Waiting { runs: (() => void)[]; held: Set<ServerResponse>; /** a waiting request was run and is not answered yet */ running: boolean }

/**
 * Answers a client leaves unread count against its connection: past `max`
 * bytes, its next request waits until the client has read enough. node:http
 * gives a pipelined request's response the socket only once every earlier
 * answer went out (no socket: something is unread), and stops reading the
 * connection while its output waits; past `maxWaiting` waiting requests the
 * connection is closed.
 */
export function unreadGate(max: number, maxWaiting: number) {
  /** Bytes of answers unread: in the socket's buffer and in responses still waiting for it. */
  const unread = (socket: Socket, w: Waiting): number => {
    let n = socket.writableLength;
    for (const r of w.held) n += r.writableLength;
    return n;
  };
  const pump = (socket: Socket, w: Waiting): void => {
    // one at a time: the next is run once this one's answer is made and counted
    while (!w.running && w.runs.length > 0 && unread(socket, w) <= max) w.runs.shift()!();
  };
  /** each connection's waiting requests and held answers, for as long as it lives */
  const states = new WeakMap<Socket, Waiting>();
  const state = (socket: Socket): Waiting => {
    const w = states.get(socket);
    if (w) return w;
    const made: Waiting = { runs: [], held: new Set(), running: false };
    states.set(socket, made);
    // less is unread once the socket's buffer empties or a waiting answer went out
    socket.on('drain', () => pump(socket, made));
    socket.once('close', () => {
      made.runs.length = 0;
      made.held.clear();
    });
    return made;
  };
  /** Run a request whose response has no socket yet once its connection's unread answers are within the bound. */
  return (req: IncomingMessage, res: ServerResponse, run: (answered: () => void) => void): void => {
    const socket = req.socket;
    const w = state(socket);
    if (w.runs.length >= maxWaiting) {
      // a client that sends on and on without reading: its connection ends
      socket.destroy();
      return;
    }
    w.runs.push(() => {
      // its answer, made now or later, counts until the socket takes it
      if (res.socket === null) {
        w.held.add(res);
        res.once('socket', () => w.held.delete(res));
      }
      res.once('finish', () => pump(socket, w));
      res.once('close', () => {
        w.held.delete(res);
        pump(socket, w);
      });
      w.running = true;
      run(() => {
        w.running = false;
        pump(socket, w);
      });
    });
    pump(socket, w);
  };
}
