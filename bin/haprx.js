#!/usr/bin/env node
// Runs the compiled CLI when it has been built, otherwise the TypeScript source
// (Node.js 24 runs it directly).
import { existsSync } from 'node:fs';

const built = new URL('../dist/src/cli/main.js', import.meta.url);
await import(existsSync(built) ? built.href : new URL('../src/cli/main.ts', import.meta.url).href);
