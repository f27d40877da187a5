/**
 * What other plugins use of the mqtt notifier type: the topic checks core
 * scripts apply to the topics they subscribe to.
 */
export { topicFilterProblem } from './topics';
