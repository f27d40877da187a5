/**
 * What plugin authors import (`eva-sysapi-runtime/plugin`): the types of a
 * plugin and of a notifier type, nothing to run. plugins/README.md is the
 * guide.
 */
export type { PluginContext, PluginDefinition, PluginKind } from '../../core/plugin';
export type { ModuleLogger } from '../../core/log';
// the service `notifiers` (needs: ['notifiers']) is declared there: without it a plugin could not name it
import './service';
export type {
  ActionEvent, DeliveryError, Endpoint, EndpointEnv, EndpointFactory, LogRecord, NotifierConfig, NotifierEvents, NotifierPlugin,
  NotifierType, SettingDecl, SettingKind, SettingsSchema, StateEvent, Subject, Subscription,
} from './contract';
