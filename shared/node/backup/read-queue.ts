import type { FileToRead } from './walk.ts';

/** Where a backup's files to read come from: the walk's list, or the walk itself as it goes (ReadQueue). */
export interface ReadSource {
  /** The next file, or undefined when none is there now. */
  next(): FileToRead | undefined;
  /** Whether more files may still come (the walk goes on). */
  more(): boolean;
  /** Files given that were not taken (a backup that stopped early names the first). */
  left(): FileToRead[];
  /** Calls `fn` whenever files come or the walk ends. */
  onMore(fn: () => void): void;
  /** The backup takes no more files. */
  close?(): void;
  /**
   * Calls `fn` with what the walk matched without reading (all of it so far, then as it comes): bytes and
   * chunks counted among the files to read that are not read; `earlier`: an interrupted run stored them.
   */
  onMatched?(fn: Matched): void;
}

export type Matched = (bytes: number, chunks: number, earlier: boolean) => void;

/**
 * The files of a walk that held them all. Each is let go of once taken: a file in the list keeps its
 * folder's nodes alive after the folder is sealed (at 100,000 files, ~25 MB held to the end).
 */
export function listSource(reads: FileToRead[]): ReadSource {
  let at = 0;
  return {
    next: () => {
      if (at === reads.length) return undefined;
      const f = reads[at]!;
      (reads as (FileToRead | undefined)[])[at++] = undefined;
      return f;
    },
    more: () => false,
    left: () => reads.slice(at),
    onMore: () => undefined,
  };
}

/**
 * Files to read handed over by a walk while it goes on (a backup of more files than a walk holds): the
 * walk waits while `max` are queued, so memory follows the queue and the reads in flight, not the number
 * of files. Once the backup stops taking files (`close`), the walk runs on without waiting.
 */
export class ReadQueue implements ReadSource {
  private items: FileToRead[] = [];
  private head = 0;
  private ended = false;
  private closed = false;
  private wake: () => void = () => undefined;
  private room: (() => void) | null = null;
  private tell: Matched | null = null;
  private readonly untold = { bytes: [0, 0], chunks: [0, 0] };

  constructor(private readonly max: number) {}

  push(f: FileToRead): void | Promise<void> {
    if (this.closed) return;
    this.items.push(f);
    if (this.items.length - this.head === 1) this.wake();
    if (this.items.length - this.head >= this.max) return new Promise((r) => (this.room = r));
  }

  next(): FileToRead | undefined {
    if (this.head === this.items.length) return undefined;
    const f = this.items[this.head++]!;
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    if (this.room && this.items.length - this.head <= this.max / 2) this.letWalk();
    return f;
  }

  more(): boolean {
    return !this.ended && !this.closed;
  }

  left(): FileToRead[] {
    return this.items.slice(this.head);
  }

  onMore(fn: () => void): void {
    this.wake = fn;
  }

  /** The walk matched a file without reading it. */
  matched(bytes: number, chunks: number, earlier: boolean): void {
    if (this.tell) return this.tell(bytes, chunks, earlier);
    this.untold.bytes[+earlier]! += bytes;
    this.untold.chunks[+earlier]! += chunks;
  }

  onMatched(fn: Matched): void {
    this.tell = fn;
    for (const earlier of [false, true])
      if (this.untold.bytes[+earlier] || this.untold.chunks[+earlier])
        fn(this.untold.bytes[+earlier]!, this.untold.chunks[+earlier]!, earlier);
  }

  /** The walk is done. */
  end(): void {
    this.ended = true;
    this.wake();
  }

  /** The backup stops taking files (it failed or was cancelled): the walk no longer waits. */
  close(): void {
    this.closed = true;
    this.letWalk();
    this.wake();
  }

  private letWalk(): void {
    const r = this.room;
    this.room = null;
    r?.();
  }
}
