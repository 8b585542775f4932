import type { PipelineSettings } from '../../settings.ts';
import type { Repository } from '../repository/repository.ts';
import {
  planFetches,
  runFetches,
  startFetchPool,
  type BlobNeed,
  clearDamageMarks,
} from '../pipeline/blob-fetch.ts';
import type { JobControl } from '../jobs/job-control.ts';
import type { JobListener } from '../jobs/job-events.ts';
import type { TreeNode } from '../format/tree.ts';
import { snapshotEntries } from '../repository/snapshot-tree.ts';
import { StatsCollector, type TransferSummary } from '../jobs/stats-collector.ts';

export interface VerifyProblem {
  path: string;
  blob: number;
  target?: string;
  message: string;
}

export interface VerifyResult {
  snapshotId: string;
  backupId: string;
  blobs: number;
  bytes: number;
  problems: VerifyProblem[];
  transfer: TransferSummary;
}

/**
 * Downloads every distinct blob a snapshot needs, its folder listings (tree blobs) included, and proves
 * it (AEAD, blob id, length). A bad or missing blob is reported once for each file or folder that uses it
 * (a folder as "path/"); a folder whose listing cannot be read is reported, and the rest still checked.
 */
export async function runVerifyJob(
  repo: Repository,
  opts: { snapshotId: string; settings: PipelineSettings; control?: JobControl },
  listener: JobListener,
): Promise<VerifyResult> {
  const ks = repo.ks;
  const snap = ks.snapshots.get(opts.snapshotId);
  if (!snap) throw new Error(ks.snapshots.notFound(opts.snapshotId));
  const problems: VerifyProblem[] = [];
  const users = new Map<string, { path: string; blob: number }[]>();
  const needs: BlobNeed[] = [];
  let bytes = 0;
  // Tree blobs are downloaded and proven too: the walk may have read them from the local cache.
  const blobsOf = (node: TreeNode): string[] =>
    node.type === 'dir' ? [node.subtree!] : (node.content ?? []);
  const entries = await snapshotEntries(repo, snap.doc.tree, {
    onUnreadable: (path, message) => problems.push({ path: `${path}/`, blob: 0, message }),
  });
  entries.unshift({ path: '/', node: { type: 'dir', subtree: snap.doc.tree } as TreeNode });
  for (const entry of entries) {
    const { node } = entry;
    const path = node.type === 'dir' && !entry.path.endsWith('/') ? `${entry.path}/` : entry.path;
    for (const [i, hex] of blobsOf(node).entries()) {
      let u = users.get(hex);
      if (!u) {
        users.set(hex, (u = []));
        const loc = ks.index.lookup(Buffer.from(hex, 'hex'));
        if (loc) {
          needs.push({ loc, writes: [] });
          bytes += loc.plainLength;
        } else u.push({ path, blob: -1 });
      }
      u.push({ path, blob: i });
    }
  }
  for (const [hex, u] of users)
    if (u[0]?.blob === -1)
      for (const x of u.slice(1))
        problems.push({
          ...x,
          message: `blob ${hex.slice(0, 12)}… is not in the repository (its pack is missing)`,
        });
  const control = opts.control;
  const stats = new StatsCollector(
    bytes,
    needs.length,
    (f) => listener.progress?.(f),
    control ? { stillMs: () => control.stillMs() } : {},
  );
  stats.startTicking();
  const pool = await startFetchPool(ks, opts.settings);
  try {
    await runFetches({
      pool,
      down: repo.unreachable(),
      plan: planFetches(needs),
      stats,
      authenticated: clearDamageMarks(ks.index),
      resolveWrites: () => [],
      onOutcome: (m, carried) => {
        if (m.t === 'restored') stats.add(m.timing, true);
        const ok = new Set(m.t === 'restored' ? m.ok : []);
        const why = new Map(m.t === 'restored' ? m.failed.map((x) => [x.id, x.error.message]) : []);
        for (const n of carried) {
          const hex = n.loc.id.toString('hex');
          if (ok.has(hex)) continue;
          const message = m.t === 'failed' ? m.error.message : (why.get(hex) ?? 'not checked');
          const served = m.t === 'restored' && m.from !== undefined ? m.from : n.loc.copies[0]!;
          const target = (m.t === 'failed' && m.error.target) || ks.targetById(served).name;
          for (const x of users.get(hex) ?? []) problems.push({ ...x, target, message });
        }
      },
      control: opts.control,
    });
  } finally {
    await pool.close();
  }
  const transfer = stats.finish(bytes, needs.length);
  problems.sort((a, b) => a.path.localeCompare(b.path) || a.blob - b.blob);
  return {
    snapshotId: opts.snapshotId,
    backupId: opts.snapshotId,
    blobs: needs.length,
    bytes,
    problems,
    transfer,
  };
}
