// build.mjs — console/src -> console/dist (one HTML, one JS, one CSS).
// Deterministic: the same sources and the pinned esbuild give the same
// bytes (no hashes, timestamps or source maps), so `make test` can check
// that the committed dist/ is what the sources build.
import * as esbuild from 'esbuild';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';

const out = process.argv[2] || 'dist';
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await esbuild.build({
	entryPoints: { app: 'src/main.jsx' },
	outdir: out,
	bundle: true,
	minify: true,
	format: 'iife',
	target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
	jsx: 'automatic',
	jsxImportSource: 'preact',
	legalComments: 'eof',
	charset: 'utf8',
	logLevel: 'warning',
});
copyFileSync('src/index.html', out + '/index.html');
