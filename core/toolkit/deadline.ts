/**
 * A clock over a call (the notifier host's over each send): `fn` gets a
 * signal that aborts after `seconds` (or when `outer` aborts), and the call
 * ends then as a failure whether or not `fn` honours the signal: a send that
 * never returns cannot hold its queue. A call that ends at the signal fails
 * with its own reason.
 */
export async function withDeadline<T>(seconds: number, fn: (signal: AbortSignal) => Promise<T>, outer?: AbortSignal): Promise<T> {
  const ac = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onOuter: (() => void) | undefined;
  const cut = new Promise<never>((_, reject) => {
    // the call is told first: one that honours the signal ends with its own reason (it says more)
    const fail = (err: Error) => { ac.abort(err); setImmediate(() => reject(err)); };
    timer = setTimeout(() => fail(timeoutError(seconds)), seconds * 1000);
    if (outer) {
      onOuter = () => fail(outer.reason instanceof Error ? outer.reason : new Error('stopped'));
      if (outer.aborted) onOuter();
      else outer.addEventListener('abort', onOuter, { once: true });
    }
  });
  try {
    // a late rejection of fn, after the cut, is not an unhandled one
    const call = Promise.resolve().then(() => fn(ac.signal));
    call.catch(() => undefined);
    return await Promise.race([call, cut]);
  } finally {
    clearTimeout(timer);
    if (onOuter) outer?.removeEventListener('abort', onOuter);
  }
}

function timeoutError(seconds: number): Error {
  const e = new Error(`no answer within ${seconds} s`);
  e.name = 'TimeoutError';
  return e;
}

/** Wait for `p`, or until `signal` aborts (then rejects with its reason). */
export async function unlessAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) throw signal.reason;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    // the signal's reason is the Error the caller aborted with (the host's timeout or stop)
    onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([p, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort!);
  }
}
