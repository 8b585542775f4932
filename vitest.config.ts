import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['{electron,shared,workers,bench,test,renderer,e2e}/**/*.test.{ts,tsx}'],
    // S3 and SQLite tests talk to real processes and files; one file at a time per core keeps
    // versitygw, the workers and the test process from starving each other on 2-core machines.
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    globalSetup: ['test/support/global-setup.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
