// Bundles the extension (node, CJS, `vscode` external), the webview (browser IIFE) and, with
// --tests, the unit and integration tests (node, one file per test).
import * as esbuild from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';

const production = process.argv.includes('--production');
const tests = process.argv.includes('--tests');

const common = { bundle: true, logLevel: 'warning', sourcemap: !production, minify: production, legalComments: 'none' };

await Promise.all([
  esbuild.build({
    ...common,
    entryPoints: ['src/extension.ts'],
    outfile: 'dist/extension.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['vscode'],
  }),
  esbuild.build({
    ...common,
    entryPoints: ['src/webview/main.ts'],
    outfile: 'dist/webview.js',
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
  }),
]);

if (tests) {
  rmSync('out/test', { recursive: true, force: true });
  const entries = [];
  for (const dir of ['test/unit', 'test/integration']) {
    for (const f of readdirSync(dir)) if (f.endsWith('.test.ts')) entries.push(`${dir}/${f}`);
  }
  await esbuild.build({
    ...common,
    sourcemap: true,
    minify: false,
    entryPoints: entries,
    outdir: 'out/test',
    outbase: 'test',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['vscode'],
  });
}
