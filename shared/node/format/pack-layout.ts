import { MAX_BLOBS_PER_PACK, type BlobKind } from '../../format/constants.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { sealBlobInto } from './blob-codec.ts';
import { packTrailerLength, sealPackTrailer } from './pack.ts';
import { sealedLength } from './sealed-object.ts';

/** A blob's place in its pack, as the trailer and the index name it. */
export interface LaidBlob {
  kind: BlobKind;
  id: Uint8Array;
  offset: number;
  storedLength: number;
  plainLength: number;
}

/**
 * One pack as it is assembled (docs/FORMAT.md, "Packs"): sealed blobs one after another, each one's
 * offset and lengths, then the sealed trailer. Pure: where the bytes go (a spool file, memory) is the
 * caller's. Data packs (workers/pack-writer.ts) and tree packs (repository/tree-writer.ts) both use it.
 */
export class PackLayout {
  readonly blobs: LaidBlob[] = [];
  /** Bytes of sealed blobs so far: where the next one goes. */
  used = 0;

  constructor(readonly id: Buffer) {}

  /**
   * Whether one more sealed blob of `need` bytes keeps the pack, trailer included, within `limit`; an
   * empty pack takes any blob. At most MAX_BLOBS_PER_PACK blobs.
   */
  fits(need: number, limit: number): boolean {
    return (
      this.blobs.length < MAX_BLOBS_PER_PACK &&
      (this.used === 0 || this.used + need + packTrailerLength(this.blobs.length + 1) <= limit)
    );
  }

  /** Seals a blob into `out` (its sealed length or more) and lays it at the pack's end; returns its length. */
  seal(
    sodium: SodiumProvider,
    sealKey: Uint8Array,
    out: Uint8Array,
    blob: { kind: BlobKind; id: Uint8Array; flags: number; payload: Uint8Array; plainLength: number },
  ): number {
    const need = sealedLength(blob.payload.length);
    const n = sealBlobInto(sodium, out, {
      sealKey,
      kind: blob.kind,
      id: blob.id,
      flags: blob.flags,
      payload: blob.payload,
    });
    if (n !== need) throw new Error(`a sealed blob came out ${n} bytes, not ${need}`);
    this.blobs.push({
      kind: blob.kind,
      id: blob.id,
      offset: this.used,
      storedLength: n,
      plainLength: blob.plainLength,
    });
    this.used += n;
    return n;
  }

  /** The sealed trailer that ends the pack, bound to its id. */
  trailer(sodium: SodiumProvider, metaKey: Uint8Array): Buffer {
    return sealPackTrailer(sodium, metaKey, this.id, this.blobs);
  }
}
