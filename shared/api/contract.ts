/**
 * The one API between the UI and the engine: every method's request schema and response type, and the
 * events. Both bridges (Electron IPC, web mode HTTP + WebSocket) carry exactly this; the receiving side
 * validates every request with these schemas. Browser-safe.
 */
import * as z from 'zod';
import { EC_MAX_K, EC_MAX_M, quorumFits, REPLICAS_MAX } from '../pool-policy.ts';
import { planDraftSchema } from '../plans.ts';
import { maintenanceSchema } from '../retention.ts';
import { targetConfigSchema } from '../settings.ts';
import type { StatsFrame, ChunkTiming } from '../stats.ts';
import type {
  AppStatus,
  BackupView,
  BrowsePageView,
  DirListing,
  EntryView,
  ForgetEstimateView,
  JobStatsView,
  MaintenanceView,
  JobView,
  PlanView,
  PoolOperationView,
  PoolView,
  SearchView,
  VersionsView,
  BackupPreviewView,
  DiffView,
  SettingsView,
  SnapshotRedundancyView,
  TargetView,
  TestResult,
  VerificationView,
} from './views.ts';

const passphrase = z.string().min(8, 'The passphrase must have at least 8 characters.').max(1024);
const id = z.string().regex(/^[0-9a-f]{12}$/, 'Not a Cairn id.');
const targetDraft = z.object({ name: z.string(), config: targetConfigSchema, secret: z.string().optional() });
const count = (what: string, max: number) =>
  z
    .number({ error: `${what} must be a number.` })
    .int(`${what} must be a whole number.`)
    .min(1, `${what} must be from 1 to ${max}.`)
    .max(max, `${what} must be from 1 to ${max}.`);
const copies = (what: string) =>
  z
    .number({ error: `${what} must be a number.` })
    .int(`${what} must be a whole number.`)
    .min(1, `${what} must be 1, 2 or 3.`)
    .max(REPLICAS_MAX, `${what} must be 1, 2 or 3.`);

export const requests = {
  'app.status': z.object({}),
  'app.init': z.object({ passphrase }),
  'app.unlock': z
    .object({ passphrase: z.string().max(1024).optional(), recoveryKey: z.string().max(200).optional() })
    .refine((r) => (r.passphrase === undefined) !== (r.recoveryKey === undefined), {
      message: 'Give the passphrase or the recovery key.',
    }),
  /** First run on a new machine: open the repository a target already holds. */
  'app.connect': z
    .object({
      draft: targetDraft,
      passphrase: z.string().max(1024).optional(),
      recoveryKey: z.string().max(200).optional(),
    })
    .refine((r) => (r.passphrase === undefined) !== (r.recoveryKey === undefined), {
      message: 'Give the passphrase or the recovery key.',
    }),
  /** Creates a recovery key slot; the key is returned once, to be shown and stored by the user. */
  'keys.recovery': z.object({}),
  'settings.get': z.object({}),
  /** Each field given replaces the saved value; absent: unchanged. */
  'settings.save': z.object({
    chunkSize: z.number().optional(),
    workers: z.number().optional(),
    uploadsPerWorker: z.number().optional(),
    /** Upload bytes a second, every upload together; 0: no cap. */
    uploadLimit: z.number().optional(),
    /** Download bytes a second (restores, verifies); 0: no cap. */
    downloadLimit: z.number().optional(),
    /** The daily window the limits hold in; null: all day. */
    limitHours: z.object({ from: z.number(), to: z.number() }).nullable().optional(),
  }),
  'targets.list': z.object({}),
  'targets.test': z.object({
    draft: targetDraft.optional(),
    name: z.string().optional(),
    replacing: z.string().optional(),
  }),
  'targets.save': z.object({
    draft: targetDraft,
    replacing: z.string().optional(),
    /** A new target's share of the pool's packs, relative to the others (default 100). */
    weight: z
      .number({ error: 'The weight must be a number.' })
      .int('The weight must be a whole number.')
      .min(1, 'The weight must be from 1 to 1000000.')
      .max(1_000_000, 'The weight must be from 1 to 1000000.')
      .optional(),
  }),
  'targets.remove': z.object({ name: z.string() }),
  'backup.start': z.object({
    sources: z.array(z.string().min(1)).min(1, 'Add at least one file or folder.'),
    target: z.string().optional(),
    /** Exclude patterns (docs/guide/backups-and-plans.md, "Exclude patterns"); checked by the engine. */
    exclude: z
      .array(z.string().max(1024, 'An exclude pattern is longer than 1024 characters.'))
      .max(200)
      .optional(),
  }),
  /** What a backup of these sources would hold and leave out: counted on disk, nothing read or stored. */
  'backup.preview': z.object({
    sources: z.array(z.string().min(1)).min(1, 'Add at least one file or folder.'),
    exclude: z.array(z.string().max(1024, 'An exclude pattern is longer than 1024 characters.')).max(200),
  }),
  /** The patterns the last backup started here left out (the next one's default) and the suggestions. */
  'backup.excludes': z.object({}),
  'plans.list': z.object({}),
  /** Adds a plan, or changes the one named `replacing`. */
  'plans.save': z.object({ draft: planDraftSchema, replacing: z.string().optional() }),
  'plans.remove': z.object({ name: z.string() }),
  /** Runs a plan now; answers once its backup job has started. */
  'plans.run': z.object({ name: z.string() }),
  'jobs.list': z.object({}),
  'jobs.stats': z.object({ jobId: z.string() }),
  'jobs.pause': z.object({ jobId: z.string() }),
  'jobs.resume': z.object({ jobId: z.string() }),
  'jobs.cancel': z.object({ jobId: z.string() }),
  /** Takes an ended job off "Needs attention"; its card stays until dismissed. */
  'jobs.seen': z.object({ jobId: z.string() }),
  /** Forgets a stopped job (a cancelled or interrupted backup is then no longer resumable). */
  'jobs.discard': z.object({ jobId: z.string() }),
  'backups.list': z.object({}),
  'backups.entries': z.object({ backupId: id }),
  /** In a pool, each backup's redundancy (by backup id) from the packs it uses; empty outside a pool. */
  'backups.redundancy': z.object({}),
  'restore.start': z.object({
    backupId: id,
    // An empty list would mean "everything" to the engine: the UI always names what it restores.
    paths: z
      .array(z.string().min(1, 'A path to restore is empty.'))
      .min(1, 'Nothing selected to restore: choose at least one file or folder.'),
    to: z.string().trim().min(1, 'Choose a destination folder.'),
    existing: z.enum(['skip', 'overwrite']),
  }),
  'fs.list': z.object({ path: z.string().optional() }),
  /** One page of one folder of a backup ('' is the top: one folder per source). */
  'backups.browse': z.object({
    backupId: id,
    dir: z.string().max(4096, 'The folder path is longer than 4096 characters.'),
    offset: z.number().int().min(0, 'The offset must be 0 or more.'),
    limit: z.number().int().min(1).max(1000, 'At most 1000 entries a page.'),
  }),
  /** Every backup's entries matching a name or glob ("report.docx", "*.pdf", "2024/**\/invoice*"). */
  'backups.search': z.object({
    query: z
      .string()
      .trim()
      .min(1, 'Type a name or a pattern to search for.')
      .max(512, 'The search is longer than 512 characters.'),
    limit: z.number().int().min(1).max(5000).optional(),
  }),
  /** Every version of one entry of a backup across this machine's backups (Browse → Versions). */
  'backups.versions': z.object({
    backupId: id,
    path: z.string().min(1, 'Choose a file or folder.').max(4096, 'The path is longer than 4096 characters.'),
  }),
  /** What changed from one backup to another: the counts, and the first `limit` entries in path order. */
  'backups.diff': z.object({
    from: id,
    to: id,
    limit: z.number().int().min(1).max(5000, 'At most 5000 entries.').optional(),
  }),
  /** Downloads and checks every blob of a backup, as a job; its outcome is kept with the backup. */
  'backups.verify': z.object({ backupId: id }),
  /** The newest verification of each backup. */
  'backups.verifications': z.object({}),
  /** Restores into the places the backup's sources were taken from (each source's parent folder). */
  'restore.original': z.object({
    backupId: id,
    paths: z.array(z.string()),
    existing: z.enum(['skip', 'overwrite']),
  }),
  /** The space deleting these backups would free once prune has run (blobs no other backup uses). */
  'backups.estimateForget': z.object({ backupIds: backupIds() }),
  /** Deletes backups (forget by id); their data stays until prune. */
  'backups.forget': z.object({ backupIds: backupIds() }),
  'maintenance.get': z.object({}),
  'maintenance.save': maintenanceSchema,
  /** Runs prune now as a job (dryRun: only estimates what it would free). */
  'maintenance.prune': z.object({ dryRun: z.boolean() }),
  /** The pool's targets, their copies and health, the policy and the redundancy (keystore only). */
  'pool.status': z.object({}),
  /**
   * Whole copies (`replicas`) or erasure coding (`ec`: k data + m parity shards), and the copies or
   * shards a backup waits for; packs already stored follow through Rebalance (or Repair, for copies).
   */
  'pool.setPolicy': z
    .object({
      replicas: copies('Copies').optional(),
      ec: z
        .object({ k: count('k (data shards)', EC_MAX_K), m: count('m (parity shards)', EC_MAX_M) })
        .optional(),
      writeQuorum: count('The write quorum', EC_MAX_K + EC_MAX_M),
    })
    .superRefine((r, ctx) => {
      if ((r.replicas === undefined) === (r.ec === undefined))
        ctx.addIssue({
          code: 'custom',
          path: ['replicas'],
          message: 'Choose whole copies (replicas) or erasure coding (ec), one of them.',
        });
      else if (
        r.replicas !== undefined &&
        !quorumFits({ scheme: 'replicas', copies: r.replicas, writeQuorum: r.writeQuorum })
      )
        ctx.addIssue({
          code: 'custom',
          path: ['writeQuorum'],
          message: 'A backup cannot wait for more copies than the policy keeps.',
        });
      else if (r.ec && !quorumFits({ scheme: 'ec', ...r.ec, writeQuorum: r.writeQuorum }))
        ctx.addIssue({
          code: 'custom',
          path: ['writeQuorum'],
          message: `A backup waits for ${r.ec.k} to ${r.ec.k + r.ec.m} shards: a pack is read back from any ${r.ec.k}.`,
        });
    }),
  /** Writes every copy the policy asks for and a pack lacks (queued, lost, or an older policy). */
  'pool.repair': z.object({}),
  /** Moves copies to where placement now puts them (dryRun: only counts them). */
  'pool.rebalance': z.object({ dryRun: z.boolean().optional() }),
  /** Tests each target now (reachable, writable); the results show on the Storage screen. */
  'pool.check': z.object({}),
  /**
   * One member: a new weight (its share of new copies), active again after a drain, or drained (it takes
   * no new copies and what it holds moves to the others, as `cairn target drain`).
   */
  'pool.setTarget': z
    .object({
      name: z.string().min(1),
      weight: z
        .number()
        .int()
        .min(1, 'A weight is at least 1.')
        .max(1_000_000, 'A weight is at most 1000000.')
        .optional(),
      active: z.literal(true).optional(),
      drain: z.literal(true).optional(),
    })
    .refine((r) => [r.weight !== undefined, r.active, r.drain].filter(Boolean).length === 1, {
      message: 'Change one thing at a time: a weight, active again, or drain.',
      path: ['weight'],
    }),
} as const;

function backupIds() {
  return z
    .array(id, { error: 'Name the backups as a list of ids.' })
    .min(1, 'Name at least one backup.')
    .max(1000, 'At most 1000 backups at a time.');
}

export type Method = keyof typeof requests;
export type Request<M extends Method> = z.infer<(typeof requests)[M]>;

export interface Responses {
  'app.status': AppStatus;
  'app.init': AppStatus;
  'app.unlock': AppStatus;
  'app.connect': AppStatus;
  'keys.recovery': { recoveryKey: string };
  'settings.get': SettingsView;
  'settings.save': SettingsView;
  'targets.list': TargetView[];
  'targets.test': TestResult;
  'targets.save': TargetView;
  'targets.remove': { removed: string };
  'backup.start': JobView;
  'backup.preview': BackupPreviewView;
  'backup.excludes': { patterns: string[]; suggested: string[] };
  'plans.list': PlanView[];
  'plans.save': PlanView;
  'plans.remove': { removed: string };
  'plans.run': JobView;
  'jobs.list': JobView[];
  'jobs.stats': JobStatsView;
  'jobs.pause': JobView;
  'jobs.resume': JobView;
  'jobs.cancel': JobView;
  'jobs.discard': JobView;
  'jobs.seen': JobView;
  'backups.list': BackupView[];
  'backups.entries': EntryView[];
  'backups.redundancy': Record<string, SnapshotRedundancyView>;
  'restore.start': JobView;
  'fs.list': DirListing;
  'backups.browse': BrowsePageView;
  'backups.search': SearchView;
  'backups.versions': VersionsView;
  'backups.diff': DiffView;
  'backups.verify': JobView;
  'backups.verifications': VerificationView[];
  'restore.original': JobView;
  'backups.estimateForget': ForgetEstimateView;
  'backups.forget': { removed: string[] };
  'maintenance.get': MaintenanceView;
  'maintenance.save': MaintenanceView;
  'maintenance.prune': JobView;
  'pool.status': PoolView;
  'pool.setPolicy': PoolView;
  'pool.repair': PoolOperationView;
  'pool.rebalance': PoolOperationView;
  'pool.setTarget': PoolOperationView;
  'pool.check': PoolView;
}

export interface Events {
  /** A job was created or changed state or progress (at most every 250 ms per job). */
  job: JobView;
  /** A stats frame of a running job, with the chunk timings completed during it. */
  stats: { jobId: string; frame: StatsFrame; chunks: ChunkTiming[] };
  /** A plan started or finished a run (scheduled or not), or was saved or removed. */
  plan: { name: string };
  /** Maintenance settings or a prune's outcome changed. */
  maintenance: MaintenanceView;
}

export type EventName = keyof Events;

/** Every event, for the bridges to forward (declared here once). */
export const EVENT_NAMES = ['job', 'stats', 'plan', 'maintenance'] as const satisfies readonly EventName[];

/** Failure answer of any method: a sentence for people, plus a field name when an input was wrong. */
export interface ApiError {
  message: string;
  field?: string;
}

/** The object the renderer talks to, whichever bridge carries it. */
export interface CairnApi {
  invoke<M extends Method>(method: M, request: Request<M>): Promise<Responses[M]>;
  subscribe<E extends EventName>(event: E, listener: (payload: Events[E]) => void): () => void;
  /**
   * Whether the engine is reachable, as the bridge sees it (web mode: its event socket). Electron's
   * engine lives in the app's own main process, so its bridge has no such signal.
   */
  onConnection?(listener: (up: boolean) => void): () => void;
}

export class ApiCallError extends Error implements ApiError {
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'ApiCallError';
  }
}

export function isMethod(m: unknown): m is Method {
  return typeof m === 'string' && Object.prototype.hasOwnProperty.call(requests, m);
}

/** Parses a request for `method`; throws ApiCallError naming the first bad field. */
export function parseRequest<M extends Method>(method: M, body: unknown): Request<M> {
  const r = requests[method].safeParse(body ?? {});
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new ApiCallError(issue?.message ?? 'Invalid request.', issue?.path.join('.') || undefined);
  }
  return r.data as Request<M>;
}
