#!/usr/bin/env node
// In a source checkout, runs the TypeScript sources (Node.js 24 runs them directly),
// so a stale build never shadows them; in a built image, runs the compiled CLI.
import { existsSync } from 'node:fs';

const source = new URL('../src/cli/main.ts', import.meta.url);
await import(existsSync(source) ? source.href : new URL('../dist/src/cli/main.js', import.meta.url).href);
