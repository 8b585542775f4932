/**
 * Work on many small items done a slice of time at a time, each slice its own turn of the event loop, so
 * messages that arrive meanwhile are read between slices. Items are done in the order they were given.
 * The first item that throws ends the work: what is left is dropped, and `done()` rejects with it.
 */
export class SlicedWork<T> {
  private readonly batches: (readonly T[])[] = [];
  private at = 0;
  private failure: { err: unknown } | null = null;
  private whenDone: (() => void) | null = null;

  constructor(
    private readonly o: {
      each: (item: T) => void;
      /** After the last item given so far. */
      drained: () => void;
      /** The first item that threw (once). */
      failed: (err: unknown) => void;
      sliceMs: number;
    },
  ) {}

  push(items: readonly T[]): void {
    this.batches.push(items);
    if (this.batches.length === 1) setImmediate(this.slice);
  }

  /** Every item given so far done (rejects with what failed). */
  async done(): Promise<void> {
    if (this.batches.length) await new Promise<void>((r) => (this.whenDone = r));
    this.whenDone = null;
    if (this.failure) throw this.failure.err;
  }

  /** Drops what is left. */
  clear(): void {
    this.batches.length = 0;
    this.at = 0;
  }

  private readonly slice = (): void => {
    const end = performance.now() + this.o.sliceMs;
    try {
      while (this.batches.length) {
        const items = this.batches[0]!;
        while (this.at < items.length) {
          this.o.each(items[this.at++]!);
          if ((this.at & 63) === 0 && performance.now() > end) {
            setImmediate(this.slice);
            return;
          }
        }
        this.batches.shift();
        this.at = 0;
      }
      this.o.drained();
    } catch (err) {
      this.clear();
      if (!this.failure) {
        this.failure = { err };
        this.o.failed(err);
      }
    }
    this.whenDone?.();
  };
}
