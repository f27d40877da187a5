/**
 * Errors raised inside a script's context are objects of that context's
 * realm (`instanceof Error` is false here), so they are read by shape.
 */

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The line of `file` an error points at (first frame in that file), if any. */
export function lineOf(err: unknown, file: string): number | undefined {
  const stack = (err as { stack?: unknown } | null)?.stack;
  if (typeof stack !== 'string') return undefined;
  const m = new RegExp(`${escapeRe(file)}:(\\d+)`).exec(stack);
  return m ? Number(m[1]) : undefined;
}

/** "Name: message" of any thrown value, without a stack. */
export function messageOf(err: unknown): string {
  if (err && typeof err === 'object') {
    const e = err as { name?: unknown; message?: unknown };
    if (typeof e.message === 'string') return typeof e.name === 'string' && e.name ? `${e.name}: ${e.message}` : e.message;
  }
  try { return String(err); } catch { return 'unprintable error'; }
}

/** vm's own error when a run is stopped by its time limit. */
export function isTimeout(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT';
}
