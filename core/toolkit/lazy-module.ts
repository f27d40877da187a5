/**
 * A module loaded on first use rather than with the file that names it: for a
 * dependency that costs start time and memory (a broker client, a database
 * driver: 20-30 ms and a few MB each) and that a controller needs only once
 * it is configured to use it. The returned function gives the module,
 * loading it on its first call (synchronously, like an import).
 */
export function onFirstUse<T>(id: string): () => T {
  let mod: T | undefined;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the point is to load it later than the imports
  return () => (mod ??= require(id) as T);
}
