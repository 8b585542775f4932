import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Engine } from '../../shared/node/engine/engine.ts';
import type { PipelineSettings } from '../../shared/settings.ts';
import type { ChunkTiming } from '../../shared/stats.ts';
import type { TransferSummary } from '../../shared/node/jobs/stats-collector.ts';
import { tempDir, warmPageCache, writeRandomFile } from '../../test/support/fixtures.ts';
import { s3TargetConfig } from '../../test/support/engine-env.ts';
import type { S3Server } from '../../test/support/versitygw.ts';

const DATA_DIR = path.join(os.tmpdir(), 'cairn-bench-data');

/** A random file of `size` bytes (never zeros: compression would lie), reused across suites, warmed. */
export function dataFile(size: number): string {
  fs.mkdirSync(DATA_DIR, { recursive: true });
  const file = path.join(DATA_DIR, `random-${size}.bin`);
  if (!fs.existsSync(file) || fs.statSync(file).size !== size) {
    const tmp = `${file}.tmp`;
    writeRandomFile(tmp, size);
    fs.renameSync(tmp, file);
  }
  warmPageCache(file);
  return file;
}

export async function benchEngine(): Promise<{ engine: Engine; home: string; close(): void }> {
  const home = path.join(tempDir('cairn-bench-home-'), 'home');
  const engine = await Engine.init(home, 'benchmark passphrase');
  return {
    engine,
    home,
    close() {
      engine.close();
      fs.rmSync(path.dirname(home), { recursive: true, force: true });
    },
  };
}

let targetSeq = 0;

/** A fresh target each run, so that nothing is deduplicated against an earlier run. */
export async function freshS3Target(engine: Engine, s3: S3Server, endpoint = s3.endpoint): Promise<string> {
  const name = `s3-${++targetSeq}`;
  const bucket = await s3.createBucket();
  await engine.addTarget(name, s3TargetConfig(s3, bucket, endpoint), s3.secretAccessKey);
  return name;
}

export async function freshDiscardTarget(engine: Engine): Promise<string> {
  const name = `discard-${++targetSeq}`;
  await engine.addTarget(name, { kind: 'discard' });
  return name;
}

export interface TimedRun {
  backupId: string;
  bytes: number;
  wallMs: number;
  /** First chunk read start to last chunk transfer end: the pipeline without start-up. */
  pipelineMs: number;
  summary: TransferSummary;
}

export async function timedBackup(
  engine: Engine,
  file: string,
  target: string,
  settings: Partial<PipelineSettings>,
): Promise<TimedRun> {
  let first = Infinity;
  let last = 0;
  const chunk = (t: ChunkTiming) => {
    first = Math.min(first, t.xferStart - (t.stages.read ?? 0) - (t.stages.hash ?? 0) - (t.stages.seal ?? 0));
    last = Math.max(last, t.xferEnd);
  };
  const t0 = performance.now();
  const r = await engine.backup([file], { target, settings }, { chunk });
  return {
    backupId: r.backupId,
    bytes: r.totalBytes,
    wallMs: performance.now() - t0,
    pipelineMs: last - first,
    summary: r.transfer,
  };
}

export async function timedRestore(
  engine: Engine,
  backupId: string,
  settings: Partial<PipelineSettings>,
): Promise<TimedRun> {
  const to = tempDir('cairn-bench-restore-');
  let first = Infinity;
  let last = 0;
  const chunk = (t: ChunkTiming) => {
    first = Math.min(first, t.xferStart);
    last = Math.max(last, t.xferEnd + (t.stages.open ?? 0) + (t.stages.write ?? 0));
  };
  const t0 = performance.now();
  const r = await engine.restore(backupId, { to, settings }, { chunk });
  const wallMs = performance.now() - t0;
  fs.rmSync(to, { recursive: true, force: true });
  if (r.failed.length) throw new Error(`restore failed: ${JSON.stringify(r.failed)}`);
  return { backupId, bytes: r.restoredBytes, wallMs, pipelineMs: last - first, summary: r.transfer };
}
