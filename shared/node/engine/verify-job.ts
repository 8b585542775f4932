import type { PipelineSettings } from '../../settings.ts';
import type { RestoreTask } from '../../../workers/protocol.ts';
import type { JobListener } from './job-events.ts';
import type { ChunkRef, EntryRow } from './keystore/catalog.ts';
import type { Keystore } from './keystore/keystore.ts';
import { StatsCollector, type TransferSummary } from './stats-collector.ts';
import { runFetchTasks } from './storage-access.ts';

export interface VerifyProblem {
  path: string;
  chunk: number;
  target?: string;
  message: string;
}

export interface VerifyResult {
  backupId: string;
  chunks: number;
  bytes: number;
  problems: VerifyProblem[];
  transfer: TransferSummary;
}

/**
 * Downloads every distinct chunk of a backup from every location and proves it (AEAD, chunk id, length).
 * A bad chunk is reported once for each file and index that uses it.
 */
export async function runVerifyJob(
  ks: Keystore,
  opts: { backupId: string; settings: PipelineSettings },
  listener: JobListener,
): Promise<VerifyResult> {
  const cat = ks.catalog;
  const backup = cat.getBackup(opts.backupId);
  if (!backup) throw new Error(`No backup with id ${opts.backupId}: "cairn ls" lists them.`);
  const users = new Map<string, { entry: EntryRow; ref: ChunkRef }[]>();
  const unique: ChunkRef[] = [];
  const problems: VerifyProblem[] = [];
  for (const e of cat.listEntries(opts.backupId)) {
    if (e.kind !== 'file') continue;
    const refs = cat.entryChunks(e.id);
    const expected = Math.ceil(e.size / backup.chunkSize);
    if (refs.length !== expected) {
      problems.push({
        path: e.path,
        chunk: refs.length,
        message: `the keystore lists ${refs.length} of ${expected} chunks`,
      });
    }
    for (const ref of refs) {
      const hex = ref.chunkId.toString('hex');
      let u = users.get(hex);
      if (!u) {
        users.set(hex, (u = []));
        unique.push(ref);
      }
      u.push({ entry: e, ref });
    }
  }

  const jobs: { ref: ChunkRef; location: ChunkRef['locations'][number] }[] = unique.flatMap((ref) =>
    ref.locations.length > 0 ? ref.locations.map((location) => ({ ref, location })) : [],
  );
  for (const ref of unique.filter((r) => r.locations.length === 0)) {
    for (const u of users.get(ref.chunkId.toString('hex'))!) {
      problems.push({ path: u.entry.path, chunk: u.ref.idx, message: 'the chunk has no recorded location' });
    }
  }
  const stats = new StatsCollector(
    jobs.reduce((s, j) => s + j.ref.plainSize, 0),
    jobs.length,
    (f) => listener.progress?.(f),
  );
  stats.startTicking();
  const byTid = new Map<number, (typeof jobs)[number]>();
  let bytes = 0;
  function* plan(): Generator<RestoreTask> {
    let tid = 1;
    for (const j of jobs) {
      byTid.set(tid, j);
      yield {
        tid: tid++,
        fd: null,
        offset: 0,
        length: j.ref.plainSize,
        chunkId: j.ref.chunkId,
        locations: [j.location],
      };
    }
  }
  const targets = ks.listTargets();
  await runFetchTasks(ks, opts.settings, plan(), stats, (m) => {
    const j = byTid.get(m.tid)!;
    if (m.t === 'restored') {
      bytes += j.ref.plainSize;
      stats.add(m.timing, true);
    } else {
      const target = targets.find((t) => t.id === j.location.targetId)?.name;
      for (const u of users.get(j.ref.chunkId.toString('hex'))!) {
        problems.push({ path: u.entry.path, chunk: u.ref.idx, target, message: m.error.message });
      }
    }
  });
  problems.sort((a, b) => a.path.localeCompare(b.path) || a.chunk - b.chunk);
  return {
    backupId: opts.backupId,
    chunks: jobs.length,
    bytes,
    problems,
    transfer: stats.finish(bytes, jobs.length),
  };
}
