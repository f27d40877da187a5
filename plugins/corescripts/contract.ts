/**
 * Contracts around core scripts (service `corescripts`) and the MQTT side
 * they use (an mqtt Endpoint implements MqttSubscriber). Types only.
 */

/** What an mqtt endpoint offers core scripts and the corescripts registry. */
export interface MqttSubscriber {
  /** subscribe; `handler` gets every message on topics matching `topic` */
  subscribe(owner: string, topic: string, qos: number, handler: (topic: string, payload: Buffer) => void): void;
  /** drop an owner's subscription to `topic` (or all of the owner's when omitted) */
  unsubscribe(owner: string, topic?: string): void;
  publish(topic: string, payload: string | Buffer, opts?: { qos?: 0 | 1 | 2; retain?: boolean }): Promise<void>;
}

/** Service `corescripts`: deliver controller events to core scripts. */
export interface CorescriptsService {
  /** run every script for an event; never throws */
  dispatch(event: { type: string; [field: string]: unknown }): void;
}

declare module '../../core/plugin' {
  interface Services {
    corescripts: CorescriptsService;
  }
}
