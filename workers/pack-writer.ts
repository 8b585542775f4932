import { writeSync } from 'node:fs';
import { MAX_BLOBS_PER_PACK } from '../shared/format/constants.ts';
import type { SodiumProvider } from '../shared/node/crypto/provider.ts';
import { packTrailerLength } from '../shared/node/format/pack.ts';
import { PackLayout } from '../shared/node/format/pack-layout.ts';
import { sealedLength } from '../shared/node/format/sealed-object.ts';
import { SpooledBody, nativeCrc32 } from '../shared/node/storage/put-body.ts';
import type { PackedBlob } from '../shared/node/pipeline/worker-protocol.ts';

/** Sealed blobs are gathered in memory up to this much before one write to the pack's spool file. */
const STAGE_FLUSH_BYTES = 1 << 20;

/** A spool file (opened by the coordinator, which closes it) and how much of it the current pack fills. */
class SpoolFile {
  length = 0;
  crc32: number | undefined = 0;

  constructor(readonly fd: number) {}

  reset(): void {
    this.length = 0;
    this.crc32 = nativeCrc32 ? 0 : undefined;
  }

  append(bytes: Uint8Array): void {
    for (let done = 0; done < bytes.length;)
      done += writeSync(this.fd, bytes, done, bytes.length - done, this.length + done);
    this.length += bytes.length;
    if (this.crc32 !== undefined) this.crc32 = nativeCrc32!(bytes, this.crc32);
  }

  body(): SpooledBody {
    return new SpooledBody(this.fd, this.length, this.crc32);
  }
}

interface OpenPack {
  layout: PackLayout;
  file: SpoolFile;
  /** A spool write failed part way: the pack cannot be uploaded. */
  broken?: Error;
}

export class SpoolError extends Error {}

/**
 * Assembles a worker's packs. Blobs are sealed into a small staging buffer and written to the open pack's
 * spool file (an unlinked temporary file); a closed pack is uploaded from its file while the next one
 * fills another. The spool files bound how many packs are in flight: one filling, the rest uploading.
 */
export class PackWriter {
  private readonly files: SpoolFile[];
  private readonly waiters: ((f: SpoolFile) => void)[] = [];
  private readonly stage: Buffer;
  private staged = 0;
  private open: OpenPack | null = null;
  private readonly uploads = new Set<Promise<void>>();
  /** A pack closes once it holds packSize; it may overshoot by 1 MiB to take one more blob whole. */
  private readonly limit: number;

  constructor(
    private readonly o: {
      sodium: SodiumProvider;
      sealKey: Uint8Array;
      metaKey: Uint8Array;
      packSize: number;
      /** The largest payload a blob can have (the chunk size): the staging buffer holds one sealed. */
      maxPayload: number;
      spoolFds: readonly number[];
      /** Where the spool files are, for messages. */
      spoolDir: string;
      /** Uploads a closed pack and reports the outcome itself: it never rejects. */
      upload: (packId: string, body: SpooledBody, blobs: PackedBlob[]) => Promise<void>;
      /** A pack that could not be written to its spool file, so was never uploaded. */
      failed: (packId: string, err: unknown) => void;
    },
  ) {
    if (o.spoolFds.length < 2) throw new Error('a pack writer needs at least two spool files');
    this.files = o.spoolFds.map((fd) => new SpoolFile(fd));
    this.stage = Buffer.allocUnsafeSlow(Math.max(STAGE_FLUSH_BYTES, sealedLength(o.maxPayload)));
    this.limit = o.packSize + (1 << 20) + packTrailerLength(MAX_BLOBS_PER_PACK);
  }

  /** Seals a data blob into the open pack (opening one when needed); resolves to the pack's id. */
  async add(blob: {
    id: Uint8Array;
    flags: number;
    payload: Uint8Array;
    plainLength: number;
  }): Promise<string> {
    const need = sealedLength(blob.payload.length);
    // Another task may open (or fill) a pack while this one waits for a file: check again after waiting.
    while (!this.open || !this.open.layout.fits(need, this.limit)) {
      if (this.open) this.closePack();
      const file = await this.takeFile();
      if (this.open) this.giveBack(file);
      else this.open = { layout: new PackLayout(this.o.sodium.randomBytes(32)), file };
    }
    const p = this.open;
    try {
      this.seal(p, need, blob);
    } catch (err) {
      // Blobs already reported as packed into it would be lost with it: the whole pack fails.
      p.broken = err as Error;
      throw err;
    }
    const packId = p.layout.id.toString('hex');
    if (p.layout.used >= this.o.packSize) this.closePack();
    return packId;
  }

  private seal(
    p: OpenPack,
    need: number,
    blob: { id: Uint8Array; flags: number; payload: Uint8Array; plainLength: number },
  ): void {
    if (this.staged + need > this.stage.length) this.writeStage(p);
    const oversized = need > this.stage.length; // not with payloads up to maxPayload
    const out = oversized ? Buffer.allocUnsafe(need) : this.stage.subarray(this.staged);
    const n = p.layout.seal(this.o.sodium, this.o.sealKey, out, { kind: 'data', ...blob });
    if (oversized) this.spool(p, out);
    else this.staged += n;
    if (this.staged >= STAGE_FLUSH_BYTES) this.writeStage(p);
  }

  /** Closes the open pack and waits for every upload. */
  async flush(): Promise<void> {
    this.closePack();
    while (this.uploads.size > 0) await Promise.all([...this.uploads]);
  }

  private spool(p: OpenPack, bytes: Uint8Array): void {
    try {
      p.file.append(bytes);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      throw new SpoolError(
        `cannot write pack ${p.layout.id.toString('hex').slice(0, 12)}… to its temporary file in ` +
          `${this.o.spoolDir} (${e.code ?? e.message}${e.code === 'ENOSPC' ? ': the disk is full' : ''}).`,
      );
    }
  }

  private writeStage(p: OpenPack): void {
    if (this.staged === 0) return;
    const bytes = this.stage.subarray(0, this.staged);
    this.staged = 0;
    this.spool(p, bytes);
  }

  private closePack(): void {
    const p = this.open;
    this.open = null;
    if (!p) return;
    if (p.layout.blobs.length === 0) return this.giveBack(p.file);
    const packId = p.layout.id.toString('hex');
    let upload: Promise<void>;
    try {
      if (p.broken) throw p.broken;
      this.writeStage(p);
      this.spool(p, p.layout.trailer(this.o.sodium, this.o.metaKey));
      upload = this.o.upload(packId, p.file.body(), p.layout.blobs);
    } catch (err) {
      this.staged = 0;
      this.o.failed(packId, err);
      return this.giveBack(p.file);
    }
    const tracked = upload.finally(() => {
      this.uploads.delete(tracked);
      this.giveBack(p.file);
    });
    this.uploads.add(tracked);
  }

  private takeFile(): Promise<SpoolFile> {
    const f = this.files.pop();
    if (f) {
      f.reset();
      return Promise.resolve(f);
    }
    return new Promise((resolve) =>
      this.waiters.push((file) => {
        file.reset();
        resolve(file);
      }),
    );
  }

  private giveBack(f: SpoolFile): void {
    const w = this.waiters.shift();
    if (w) w(f);
    else this.files.push(f);
  }
}
