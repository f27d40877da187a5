import path from 'node:path';
import { definePlugin } from '../../core/plugin';
import { folderFiles, loadAssets, serveAsset } from './static';

/** The page's own files: the build copies plugins/console/assets here (package.json "build"). */
export const AssetsDir = path.join(__dirname, 'assets');

/** The charting library, served from its package: the page needs no other origin. */
function vendorFiles(): Record<string, string> {
  const dir = path.dirname(require.resolve('uplot/dist/uPlot.iife.min.js'));
  return { '/vendor/uPlot.min.js': path.join(dir, 'uPlot.iife.min.js'), '/vendor/uPlot.min.css': path.join(dir, 'uPlot.min.css') };
}

/** Every file the console serves, url path -> file (the size test reads the same list). */
export function consoleFiles(): Record<string, string> {
  return { ...folderFiles(AssetsDir, '/'), ...vendorFiles() };
}

/**
 * Plugin `console`: the operator console, a static page at `/` that does
 * everything through /jrpc and the event stream (/ws) with the operator's
 * own token, like any other client.
 */
export const plugin = definePlugin({
  name: 'console',
  kind: 'service',
  version: '1.0.0',
  start(ctx) {
    const assets = loadAssets(consoleFiles());
    ctx.httpRoute('/', (req, res) => serveAsset(assets, req, res));
  },
});
