/**
 * CAIRN_DEBUG_TIMING=1: each step of a long operation says on stderr how long it took, and when since the
 * process started (`[timing] backup: walk 120 ms (at 950 ms)`). For finding where time goes in a run
 * nobody can watch (the randomized fault suite, a user's slow backup); silent otherwise.
 */
const on = process.env.CAIRN_DEBUG_TIMING === '1';

export function stepTimer(what: string): (step: string) => void {
  if (!on) return () => {};
  let last = performance.now();
  return (step) => {
    const now = performance.now();
    process.stderr.write(
      `[timing] ${what}: ${step} ${Math.round(now - last)} ms (at ${Math.round(now)} ms)\n`,
    );
    last = now;
  };
}
