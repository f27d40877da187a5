/**
 * Wait for `p` at most `ms` milliseconds: true when it fulfilled in time,
 * false when the time ran out first (p goes on; nothing cancels it). A
 * rejection of p passes through. The timer never outlives the wait, so a
 * short answer leaves nothing that keeps the process alive.
 */
export async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p.then(() => true), new Promise<boolean>((r) => { timer = setTimeout(() => r(false), ms); })]);
  } finally {
    clearTimeout(timer);
  }
}
