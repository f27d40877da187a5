import path from 'node:path';
import type { Product } from './defaults';

/**
 * Where a controller keeps its files (the specification's controller
 * directory). Everything below is relative to the controller directory.
 */
export class Paths {
  readonly dir: string;
  readonly product: Product;
  constructor(dir: string, product: Product) {
    this.dir = path.resolve(dir);
    this.product = product;
  }
  get etc() { return path.join(this.dir, 'etc'); }
  get runtime() { return path.join(this.dir, 'runtime'); }
  get xc() { return path.join(this.dir, 'xc'); }
  /** drop-in plugins (.js/.mjs) of this controller */
  get plugins() { return path.join(this.dir, 'plugins'); }
  get configFile() { return path.join(this.etc, `${this.product}.ini`); }
  get apikeysFile() { return path.join(this.etc, `${this.product}_apikeys.ini`); }
  get userDb() { return path.join(this.runtime, 'db', `${this.product}.db`); }
  get cvarsFile() { return path.join(this.runtime, `${this.product}_cvars.json`); }
  get notifyDir() { return path.join(this.runtime, `${this.product}_notify.d`); }
  get corescriptsConfig() { return path.join(this.runtime, `${this.product}_cs.json`); }
  get itemsFile() { return path.join(this.runtime, `${this.product}_items.json`); }
  get cmdDir() { return path.join(this.xc, 'cmd'); }
  get corescriptsDir() { return path.join(this.xc, this.product, 'cs'); }
  get unitScriptsDir() { return path.join(this.xc, this.product); }
}
