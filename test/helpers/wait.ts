/**
 * The one way tests wait for something to happen: poll a check until it gives
 * a truthy value. Tests never sleep a fixed time and hope; they wait for the
 * thing itself, with a deadline generous enough for a loaded shared machine.
 */

/** What a truthy value of T can be. */
export type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Poll `check` until it returns a truthy value, and return that value; throw
 * (failing the test) when `ms` pass without one. `what` names the awaited
 * thing in that error ("timed out after 20000 ms waiting for <what>"). A check
 * that throws is not retried: the error ends the wait.
 */
export async function until<T>(what: string, check: () => T | Promise<T>, ms = 20_000): Promise<Truthy<T>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v as Truthy<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(25);
  }
}
