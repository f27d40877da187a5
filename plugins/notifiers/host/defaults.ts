/**
 * Delivery defaults of every notifier. A notifier file may set any of these
 * fields for itself; an `[notifiers]` section of etc/<product>.ini changes
 * them for all notifiers of the controller.
 */
export const DeliveryDefaults = {
  /** most events waiting per notifier; past it the oldest waiting event is dropped (and counted) */
  queue_size: 10_000,
  /** most events in one send, unless the type sends fewer */
  max_batch: 100,
  /** retries of a failed batch before it is dropped (and counted) */
  retries: 5,
  /** first retry delay, seconds; doubles with each retry, with jitter */
  retry_delay: 0.5,
  /** longest retry delay, seconds */
  retry_max_delay: 30,
  /** at stop, how long a notifier may take to deliver what is still queued, seconds */
  stop_drain: 3,
};

export type DeliveryOptions = typeof DeliveryDefaults;

/** The delivery fields that count things (whole numbers); the others are seconds. */
export const WholeDeliveryFields = new Set<string>(['queue_size', 'max_batch', 'retries']);

/** Fields every notifier file has (besides its type's own), with their defaults; the CLI knows them from here. */
export const CommonFields: Record<string, unknown> = {
  enabled: false,
  space: null,
  timeout: null,
  skip_test: null,
};
