#!/usr/bin/env node
// Benchmark launcher: npm run bench -- <suite> [options]. See bench/README.md.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const { register } = await import('tsx/esm/api');
register();
await import('../bench/run.ts');
