import { maybeCompress } from '../format/compression.ts';
import type { PackEntry } from '../format/pack.ts';
import { PackLayout } from '../format/pack-layout.ts';
import { sealedLength } from '../format/sealed-object.ts';
import { encodeTree, type TreeNode } from '../format/tree.ts';
import type { TargetRow } from '../db/local-db.ts';
import type { NewPack, PackToRecord } from '../db/index-types.ts';
import { packPlacement } from '../pool/pack-placement.ts';
import { storePackWaiting, type QuorumWait } from '../pool/quorum-wait.ts';
import type { Repository } from './repository.ts';

/** Most blobs in one tree pack, so its trailer stays small. */
const MAX_TREES_PER_PACK = 10_000;
/**
 * Plain tree bytes a tree pack gathers (less when the repository's packs are smaller). Writing one holds
 * its trees four times over (plain, compressed, sealed, the pack's body) while the next gathers: with
 * the 16 MiB of a default pack that was ~40 MB of the coordinator's buffers at the top of each, the peak
 * of a 300,000-file backup (docs/PERFORMANCE.md, session 53).
 */
const TREE_PACK_BYTES = 4 << 20;

/**
 * Seals a backup's folders into tree blobs as they finish and stores the new ones in tree packs of
 * TREE_PACK_BYTES. Nothing is uploaded before `start()` (a backup that fails its checks writes nothing);
 * after it, a full pack goes up at once, so memory holds at most one pack of new trees.
 */
export class TreeWriter {
  private queue: { id: Buffer; plain: Buffer; nodes: number }[] = [];
  private queuedBytes = 0;
  private readonly queued = new Set<string>();
  private started = false;
  private writing: Promise<void> = Promise.resolve();
  private failure: unknown = null;
  readonly written = { bytes: 0, packs: 0, copiesQueued: 0 };
  /** Targets that failed once: their copies of later packs are queued at once. */
  private readonly down = new Map<number, unknown>();

  constructor(
    private readonly repo: Repository,
    private readonly target: TargetRow,
    private readonly jobId: string,
    /** How a tree pack below its write quorum waits for targets (as data packs do). */
    private readonly wait?: (packId: string) => QuorumWait,
  ) {}

  /** Encodes a folder's nodes and returns its tree id; stores the blob unless the index has it. */
  add(nodes: TreeNode[]): string {
    const plain = encodeTree(nodes);
    const id = this.repo.treeId(plain);
    const hex = id.toString('hex');
    if (!this.queued.has(hex) && !this.repo.ks.index.has(id)) {
      this.queued.add(hex);
      this.queue.push({ id, plain, nodes: nodes.length });
      this.queuedBytes += plain.length;
      if (this.started && this.queuedBytes >= this.packBytes) this.flush();
    }
    return hex;
  }

  start(): void {
    this.started = true;
    if (this.queuedBytes >= this.packBytes) this.flush();
  }

  /** Stores what is queued and waits for every upload; throws the first upload's failure. */
  async finish(): Promise<{ bytes: number; packs: number; copiesQueued: number }> {
    this.started = true;
    this.flush();
    await this.writing;
    if (this.failure) throw this.failure;
    return this.written;
  }

  private get packBytes(): number {
    return Math.min(TREE_PACK_BYTES, this.repo.ks.config.packSize);
  }

  private flush(): void {
    const limit = this.packBytes;
    while (this.queue.length) {
      let n = 0;
      let bytes = 0;
      while (n < this.queue.length && n < MAX_TREES_PER_PACK && (n === 0 || bytes < limit))
        bytes += this.queue[n++]!.plain.length;
      const batch = this.queue.splice(0, n);
      this.queuedBytes -= bytes;
      this.writing = this.writing.then(() =>
        this.failure ? undefined : this.writePack(batch).catch((err: unknown) => void (this.failure = err)),
      );
    }
  }

  private async writePack(trees: { id: Buffer; plain: Buffer; nodes: number }[]): Promise<void> {
    const { sodium, ks } = this.repo;
    const parts: Buffer[] = [];
    const packId = sodium.randomBytes(32);
    const layout = new PackLayout(packId);
    const cached: { id: Buffer; payload: Buffer; flags: number; nodes: number }[] = [];
    for (const tr of trees) {
      const { flags, payload } = maybeCompress(tr.plain);
      cached.push({ id: tr.id, payload, flags, nodes: tr.nodes });
      const out = Buffer.alloc(sealedLength(payload.length));
      layout.seal(sodium, ks.keys.blobSeal, out, {
        kind: 'tree',
        id: tr.id,
        flags,
        payload,
        plainLength: tr.plain.length,
      });
      parts.push(out);
    }
    parts.push(layout.trailer(sodium, ks.keys.metaSeal));
    const body = Buffer.concat(parts);
    const entries: PackEntry[] = layout.blobs.map((b, i) => ({ ...b, id: trees[i]!.id }));
    const placement = packPlacement(ks, this.target);
    const { copies, shards, queued, wireBytes } = await storePackWaiting(
      {
        placement,
        home: this.target.id,
        packId,
        body,
        fill: (into) => into.set(body),
        sodium,
        shardKey: ks.keys.shardMac,
        storage: (id) => this.repo.storage(ks.targetById(id)),
        down: this.down,
      },
      this.wait?.(packId.toString('hex')),
    );
    // One commit for the pack, its copies and its trees: each its own was ~20 disk syncs a tree pack on
    // the coordinator, each also waiting its turn behind the keystore writer thread's commits.
    const pack: NewPack = {
      id: packId,
      copies,
      ...(shards ? { shards, ec: placement!.ec } : {}),
      kind: 'tree',
      size: body.length,
      jobId: this.jobId,
      state: 'stored',
    };
    const targets = queued.map((q) => q.targetId);
    const queuedShards = shards ? { shards: queued.map((q) => q.shard!) } : {};
    const record: PackToRecord = {
      pack,
      blobs: entries,
      ...(targets.length ? { queued: { targets, ...queuedShards } } : {}),
    };
    ks.transaction(() => {
      ks.index.writePacks([record]);
      for (const tr of cached) ks.index.putTree(tr.id, tr.payload, { flags: tr.flags, nodes: tr.nodes });
    });
    ks.index.rememberWritten([record]);
    this.written.bytes += wireBytes;
    this.written.packs++;
    this.written.copiesQueued += queued.length;
  }
}
