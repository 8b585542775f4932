import type { Reporter, TestCase } from 'vitest/node';

/** Ends the run with one plain line ("Tests: N passed, N failed, N skipped") that CI logs can read. */
export default class SummaryReporter implements Reporter {
  private passed = 0;
  private failed = 0;
  private skipped = 0;

  onTestCaseResult(test: TestCase): void {
    const state = test.result().state;
    if (state === 'passed') this.passed++;
    else if (state === 'failed') this.failed++;
    else this.skipped++;
  }

  onTestRunEnd(_modules: unknown, errors: ReadonlyArray<unknown>): void {
    const failed = this.failed + errors.length;
    process.stdout.write(`\nTests: ${this.passed} passed, ${failed} failed, ${this.skipped} skipped\n`);
  }
}
