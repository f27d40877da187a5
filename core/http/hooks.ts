import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { injectable } from 'tsyringe';

/** Answers a request no kernel route answered; false (writing nothing): the kernel's 404. */
export type RouteHandler = (req: http.IncomingMessage, res: http.ServerResponse, ip: string) => boolean | Promise<boolean>;

/** Takes an HTTP upgrade request (a WebSocket) on one path. */
export interface UpgradeHandler {
  upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer, ip: string): void;
  /** the server stops: say goodbye to the connections taken (they are destroyed after) */
  close?(): unknown;
}

/** Routes, paths and upgrade paths plugins add to the HTTP server, per owner: a stopping plugin's go with it. */
@injectable()
export class HttpHooks {
  private routes: { owner: string; prefix: string; handler: RouteHandler }[] = [];
  private upgrades = new Map<string, { owner: string; handler: UpgradeHandler }>();
  private paths = new Map<string, { owner: string; handler: RouteHandler }>();

  addRoute(owner: string, prefix: string, handler: RouteHandler): void {
    this.routes.push({ owner, prefix, handler });
    // the longest prefix is tried first
    this.routes.sort((a, b) => b.prefix.length - a.prefix.length);
  }

  addUpgrade(owner: string, path: string, handler: UpgradeHandler): void {
    const taken = this.upgrades.get(path);
    if (taken) throw new Error(`upgrade path ${path} is already taken by ${taken.owner}`);
    this.upgrades.set(path, { owner, handler });
  }

  /** One exact path, answered on node:http before Koa (PluginContext.httpPath). */
  addPath(owner: string, path: string, handler: RouteHandler): void {
    const taken = this.paths.get(path);
    if (taken) throw new Error(`path ${path} is already taken by ${taken.owner}`);
    this.paths.set(path, { owner, handler });
  }

  removeOwner(owner: string): void {
    this.routes = this.routes.filter((r) => r.owner !== owner);
    for (const [p, u] of this.upgrades) if (u.owner === owner) this.upgrades.delete(p);
    for (const [p, h] of this.paths) if (h.owner === owner) this.paths.delete(p);
  }

  /** the handler of exactly this path, if a plugin took it */
  pathFor(path: string): RouteHandler | undefined {
    return this.paths.get(path)?.handler;
  }

  /** route handlers whose prefix covers the path, longest prefix first */
  routesFor(path: string): RouteHandler[] {
    return this.routes.filter((r) => path === r.prefix || path.startsWith(r.prefix.endsWith('/') ? r.prefix : `${r.prefix}/`))
      .map((r) => r.handler);
  }

  upgradeFor(path: string): UpgradeHandler | undefined {
    return this.upgrades.get(path)?.handler;
  }

  upgradeHandlers(): UpgradeHandler[] {
    return [...this.upgrades.values()].map((u) => u.handler);
  }
}
