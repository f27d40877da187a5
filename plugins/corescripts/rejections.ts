/**
 * A script may leave a promise rejected with nobody listening (an async
 * function called without await). Node would end the whole process for it,
 * so such rejections of script realms are caught here and reported to the
 * script's own log instead.
 *
 * Rejection tracking is per process, not per controller, so this is the one
 * piece of process-level state of core scripts: a weak map from each script
 * context's Promise.prototype to its reporter, and one process listener
 * while any controller runs core scripts. Rejections of other realms keep
 * Node's default (the process ends) unless someone else listens too.
 */
type Reporter = (reason: unknown) => void;

const reporters = new WeakMap<object, Reporter>();
let users = 0;

function onUnhandled(reason: unknown, promise: Promise<unknown>): void {
  const report = reporters.get(Object.getPrototypeOf(promise) as object);
  if (report) {
    report(reason);
    return;
  }
  if (process.listenerCount('unhandledRejection') === 1) throw reason;
}

/** Route rejections of promises whose prototype is `promiseProto` to `report`. */
export function watchRealm(promiseProto: object, report: Reporter): void {
  reporters.set(promiseProto, report);
}

/** Hold the process listener while a core-scripts plugin runs; returns its release. */
export function holdListener(): () => void {
  if (users++ === 0) process.on('unhandledRejection', onUnhandled);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--users === 0) process.off('unhandledRejection', onUnhandled);
  };
}
