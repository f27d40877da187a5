/**
 * What other plugins use of the mqtt notifier type: the topic checks core
 * scripts apply to the topics they subscribe to; the broker connection and
 * its settings, which the sparkplug type shares.
 */
export { topicFilterProblem, validTopic } from './topics';
export { Connection, NotConnected } from './connection';
export type { Outgoing } from './messages';
export { PublishFrames } from './publish-frames';
export { brokersTarget, brokersText, brokerText, MqttDefaults, MqttSettingsSchema, parseBrokers, parseMqttProps, readSettings, type MqttSettings, type Qos } from './settings';
