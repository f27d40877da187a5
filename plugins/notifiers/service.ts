import type { NotifierHost } from './contract';

/** The notifiers plugin (host/) provides the service `notifiers`: notifier types register with it. */
declare module '../../core/plugin' {
  interface Services {
    notifiers: NotifierHost;
  }
}
