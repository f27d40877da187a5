/**
 * Wait for `p` at most `ms` milliseconds: true when it fulfilled in time,
 * false when the time ran out first, or `signal` fired (the caller went
 * away) — p goes on; nothing cancels it. A rejection of p passes through.
 * Neither the timer nor the abort listener outlives the wait, so a short
 * answer leaves nothing that keeps the process (or a gone caller) alive.
 */
export async function within(p: Promise<unknown>, ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return false;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    return await Promise.race([p.then(() => true), new Promise<boolean>((r) => {
      timer = setTimeout(() => r(false), ms);
      if (signal) signal.addEventListener('abort', (onAbort = () => r(false)), { once: true });
    })]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal!.removeEventListener('abort', onAbort);
  }
}
