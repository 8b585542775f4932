import type { Db } from './db.ts';

/**
 * The blob ids a keystore holds, as a Bloom filter: a first backup asks about every blob it reads, and
 * nearly every answer is no. Each no cost an index lookup on the coordinator's thread (about 6 µs, six
 * seconds at a million files); the filter answers most of them from memory: about 1.2 MB a million ids
 * built at once, up to about twice that when it grew by layers under a first backup.
 *
 * A false "maybe" goes on to the index. A missing id (a row another process added) only costs a blob
 * stored twice, never one not stored. Ids are keyed hashes, so their bytes serve as the filter's hashes.
 */
export class IdFilter {
  /**
   * Layers of the filter, each one filled to its capacity before the next (twice as large) is begun: a
   * keystore growing under a first backup is not read again for a filter each time it outgrows one (a
   * scan of every id held the coordinator ~0.2 s at 65,000 rows and seconds at a million). Each full layer
   * adds about one false "maybe" in a hundred.
   */
  private readonly layers: { bits: Uint32Array; count: number; capacity: number }[] = [];

  constructor(expected: number) {
    this.addLayer(Math.max(1 << 16, expected * 2));
  }

  /** About 10 bits an id: one false "maybe" in a hundred at capacity. */
  private static wordsFor(capacity: number): number {
    return 1 << Math.ceil(Math.log2((capacity * 10) / 32));
  }

  private addLayer(capacity: number): void {
    this.layers.push({ bits: new Uint32Array(IdFilter.wordsFor(capacity)), count: 0, capacity });
  }

  /** Layers begun: past a few, false "maybe"s add up; build a filter of the right size instead. */
  get layerCount(): number {
    return this.layers.length;
  }

  add(id: Uint8Array): void {
    let last = this.layers[this.layers.length - 1]!;
    if (last.count >= last.capacity) {
      this.addLayer(last.capacity * 2);
      last = this.layers[this.layers.length - 1]!;
    }
    const { bits } = last;
    const mask = bits.length * 32 - 1;
    let h = readU32(id, 0);
    const step = readU32(id, 4) | 1;
    for (let i = 0; i < 7; i++, h = (h + step) >>> 0) {
      const bit = h & mask;
      bits[bit >>> 5]! |= 1 << (bit & 31);
    }
    last.count++;
  }

  mayHave(id: Uint8Array): boolean {
    const h0 = readU32(id, 0);
    const step = readU32(id, 4) | 1;
    for (const { bits } of this.layers) if (inLayer(bits, h0, step)) return true;
    return false;
  }
}

function inLayer(bits: Uint32Array, h0: number, step: number): boolean {
  const mask = bits.length * 32 - 1;
  let h = h0;
  for (let i = 0; i < 7; i++, h = (h + step) >>> 0) {
    const bit = h & mask;
    if ((bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
  }
  return true;
}

const readU32 = (b: Uint8Array, at: number): number =>
  (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;

/**
 * When and how the index cache keeps an IdFilter. It is built once has() has said no often enough to
 * pay for reading every id (about a tenth as many noes as rows), kept up to date with this connection's
 * inserts (growing by layers), and dropped when another connection commits (PRAGMA data_version, read at
 * most every 100 ms) or when it has grown by too many layers; then built again after as many noes.
 */
/**
 * Six layers hold 63 times what the first was built for (a filter built at 5,000 rows, sized for 65,536,
 * takes a first backup past four million blobs); a query of full layers then says "maybe" falsely about
 * one time in twenty: each a 6 µs index lookup, far less than reading every id again.
 */
const MAX_LAYERS = 6;

export class KnownIds {
  private filter: IdFilter | null = null;
  private misses = 0;
  private threshold = 1024;
  private version = -1;
  private checkedAt = 0;
  /**
   * Packs handed to this process's keystore writer thread (keystore-writer.ts) and not yet answered: its
   * commits change data_version as another process's would, so while any is out a change is taken as
   * its own (their ids are added when it answers). Another process committing in that window goes
   * unseen: as with any missing id, that costs at most a blob stored twice.
   */
  private writerPending = 0;
  /**
   * False once a data_version was adopted when the writer answered: another process's commit may hide
   * in it, so `certainlyNot` is no longer exact inside a write (lookups are made) until a rebuild.
   */
  private exact = true;
  private readonly dataVersion;
  private readonly count;
  private readonly prefixes;

  constructor(db: Db) {
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.count = db.prepare('SELECT count(*) FROM blobs').pluck();
    this.prefixes = db.prepare('SELECT substr(id, 1, 8) FROM blobs').pluck();
  }

  /** True when the id certainly has no row. */
  rulesOut(id: Uint8Array): boolean {
    if (!this.filter) return false;
    const now = Date.now();
    if (now - this.checkedAt > 100) {
      this.checkedAt = now;
      if (this.dataVersion.get() !== this.version && this.writerPending === 0) {
        this.drop();
        return false;
      }
    }
    return !this.filter.mayHave(id);
  }

  /** The index said no row names this id. */
  missed(): void {
    if (this.filter || ++this.misses < this.threshold) return;
    const rows = this.count.get() as number;
    if (this.misses * 10 < rows) {
      this.threshold = Math.ceil(rows / 10);
      return;
    }
    this.version = this.dataVersion.get() as number;
    this.checkedAt = Date.now();
    this.exact = true;
    const filter = new IdFilter(rows * 2);
    for (const p of this.prefixes.iterate() as IterableIterator<Buffer>) filter.add(p);
    this.filter = filter;
  }

  /**
   * Inside a write transaction, once it holds the write lock (no other connection can commit): whether
   * the filter knows every row. `certainlyNot` is then exact until the transaction ends.
   */
  currentWhileWriting(): boolean {
    if (!this.filter || !this.exact) return false;
    if (this.dataVersion.get() === this.version) return true;
    // The writer's rows whose ids are not added yet: this transaction looks ids up, the filter stays.
    if (this.writerPending === 0) this.drop();
    return false;
  }

  /** Whether a filter answers now (tests, timing). */
  get built(): boolean {
    return this.filter !== null;
  }

  /** Rows are handed to this process's keystore writer thread. */
  writerSent(): void {
    this.writerPending++;
  }

  /** The writer committed the rows it was handed (`ids`: their blobs), or failed to (`ids` empty). */
  writerAnswered(ids: Iterable<Uint8Array>): void {
    this.writerPending--;
    for (const id of ids) this.added(id);
    if (this.writerPending > 0 || !this.filter) return;
    const now = this.dataVersion.get() as number;
    if (now !== this.version) this.exact = false;
    this.version = now;
  }

  /** After `currentWhileWriting` said yes, in the same transaction: the id has no row. */
  certainlyNot(id: Uint8Array): boolean {
    return this.filter !== null && !this.filter.mayHave(id);
  }

  /** A row this connection inserted (a transaction rolled back leaves only a false "maybe"). */
  added(id: Uint8Array): void {
    if (!this.filter) return;
    this.filter.add(id);
    if (this.filter.layerCount > MAX_LAYERS) this.drop();
  }

  private drop(): void {
    this.filter = null;
    this.misses = 0;
    this.threshold = 1024;
  }
}
