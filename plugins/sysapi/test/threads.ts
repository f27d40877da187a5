import fs from 'node:fs';

/** how long a count is answered before /proc is read again, ms */
const FRESH_MS = 1000;

/**
 * `test`'s `threads`: the threads of the controller's process (EVA ICS 3.3
 * answered its Python thread count; here the main thread, libuv's pool, V8's
 * helpers and any worker), from the kernel's own count (`num_threads` of
 * /proc/self/stat). `test` is called every few seconds by monitors and at
 * full rate by benchmarks: the file is read at most once a second. Where
 * there is no /proc (not Linux), 1 + libuv's pool size.
 */
export class ThreadCount {
  private value = 0;
  private at = -Infinity;

  count(now: number): number {
    if (now - this.at < FRESH_MS && now >= this.at) return this.value;
    this.at = now;
    this.value = read();
    return this.value;
  }
}

function read(): number {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'latin1');
    // the command name (2nd field) is in parentheses and may hold spaces: count fields after its end
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // num_threads is field 20; fields[0] here is field 3 (state)
    const n = Number(fields[17]);
    if (Number.isInteger(n) && n > 0) return n;
  } catch {
    // no /proc: below
  }
  return 1 + (Number(process.env.UV_THREADPOOL_SIZE) || 4);
}
