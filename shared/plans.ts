/** Backup plans as the UI, the CLI and the engine describe them. Browser-safe. */
import * as z from 'zod';
import { chunkSizeSchema, uploadLimitSchema, workersSchema } from './settings.ts';
import { keepPolicySchema } from './retention.ts';
import { scheduleSchema } from './schedule.ts';

export const planNameSchema = z
  .string({ error: 'Plan name is required.' })
  .min(1, 'Give the plan a name.')
  .regex(
    // Empty is the min's message ("Give the plan a name."), not the character rules.
    /^$|^[\p{L}\p{N}][\p{L}\p{N} ._-]{0,63}$/u,
    'Plan name must start with a letter or digit and use letters, digits, spaces, ".", "_" and "-" (at most 64).',
  );

/** Exclude patterns the app offers (never applies unless chosen). */
export const SUGGESTED_EXCLUDES = ['node_modules/', '.cache/', '*.tmp', '.Trash*/', '__pycache__/'];

/** What a person decides about a plan; the engine adds its run state (PlanView). */
export const planDraftSchema = z.object({
  name: planNameSchema,
  sources: z
    .array(z.string().min(1, 'A source path is empty.'), { error: 'Sources must be a list of paths.' })
    .min(1, 'Add at least one file or folder to back up.'),
  /** A target's name; absent: the only target (refused when there are several). */
  target: z.string().min(1).optional(),
  chunkSize: chunkSizeSchema.optional(),
  workers: workersSchema.optional(),
  /** This plan's upload cap in bytes a second (0: none); absent: the Settings value. */
  uploadLimit: uploadLimitSchema.optional(),
  /** Exclude patterns (docs/guide/backups-and-plans.md, "Exclude patterns"); checked by the engine. */
  exclude: z.array(z.string().max(1024, 'An exclude pattern is longer than 1024 characters.')).max(200),
  schedule: scheduleSchema,
  /** Applied (forget, this machine's backups of these sources) after each successful run; absent: keep all. */
  retention: keepPolicySchema.optional(),
});
export type PlanDraft = z.infer<typeof planDraftSchema>;
