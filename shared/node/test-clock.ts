/**
 * Tests only: CAIRN_TEST_CLOCK_OFFSET_MS shifts this process's wall clock (Date.now, new Date()) by that
 * many milliseconds, as a machine whose clock is wrong would have it. The randomized fault suite and the
 * lock tests run machines whose clocks disagree; nothing a machine decides may rest on clocks agreeing.
 * Imported first by every process that runs the engine; a no-op when the variable is unset.
 */
const offset = Number(process.env.CAIRN_TEST_CLOCK_OFFSET_MS);
if (Number.isFinite(offset) && offset !== 0) {
  const RealDate = Date;
  const realNow = RealDate.now.bind(RealDate);
  const Shifted = function (this: unknown, ...args: unknown[]) {
    if (!new.target) return new RealDate(realNow() + offset).toString();
    return args.length === 0
      ? new RealDate(realNow() + offset)
      : new (RealDate as unknown as new (...a: unknown[]) => Date)(...args);
  } as unknown as DateConstructor;
  Object.setPrototypeOf(Shifted, RealDate);
  Object.defineProperty(Shifted, 'prototype', { value: RealDate.prototype });
  Shifted.now = () => realNow() + offset;
  globalThis.Date = Shifted;
}
export {};
