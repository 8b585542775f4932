/** The target form's fields, turned into a validated draft with one message per bad field. */
import {
  s3TargetConfigSchema,
  targetNameSchema,
  dirTargetConfigSchema,
  type TargetConfig,
} from '../../../../shared/settings.ts';
import type { TargetView } from '../../../../shared/api/views.ts';

export interface TargetFields {
  name: string;
  kind: 's3' | 'dir';
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secret: string;
  pathStyle: boolean;
  checksums: 'when-supported' | 'when-required';
  path: string;
  /** A new target's share of the pool's packs, relative to the others. */
  weight: string;
}

export const emptyFields: TargetFields = {
  name: '',
  kind: 's3',
  endpoint: '',
  region: 'us-east-1',
  bucket: '',
  accessKeyId: '',
  secret: '',
  pathStyle: false,
  checksums: 'when-supported',
  path: '',
  weight: '100',
};

export function fieldsFrom(t: TargetView): TargetFields {
  return t.config.kind === 's3'
    ? { ...emptyFields, name: t.name, ...t.config, secret: '' }
    : { ...emptyFields, name: t.name, kind: 'dir', path: t.config.kind === 'dir' ? t.config.path : '' };
}

export type FieldErrors = Partial<Record<keyof TargetFields, string>>;

/**
 * Validates the form. When editing, an empty secret keeps the saved one; a new S3 target needs one.
 */
export function validateTarget(
  f: TargetFields,
  editing: boolean,
): {
  draft?: { name: string; config: TargetConfig; secret?: string };
  /** Only for a new target (an edit keeps its weight). */
  weight?: number;
  errors: FieldErrors;
} {
  const errors: FieldErrors = {};
  const weight = Number(f.weight.trim());
  if (!editing && !(/^\d+$/.test(f.weight.trim()) && weight >= 1 && weight <= 1_000_000))
    errors.weight = 'The weight is a whole number from 1 to 1000000.';
  const name = targetNameSchema.safeParse(f.name.trim());
  if (!name.success) errors.name = name.error.issues[0]?.message;
  let config: TargetConfig | undefined;
  if (f.kind === 's3') {
    const r = s3TargetConfigSchema.safeParse({
      kind: 's3',
      endpoint: f.endpoint.trim(),
      region: f.region.trim(),
      bucket: f.bucket.trim(),
      accessKeyId: f.accessKeyId.trim(),
      pathStyle: f.pathStyle,
      checksums: f.checksums,
    });
    if (r.success) config = r.data;
    else for (const issue of r.error.issues) errors[issue.path[0] as keyof TargetFields] ??= issue.message;
    if (!editing && f.secret.length === 0) errors.secret = 'Secret access key is required.';
  } else {
    const r = dirTargetConfigSchema.safeParse({ kind: 'dir', path: f.path.trim() });
    if (r.success) config = r.data;
    else errors.path = r.error.issues[0]?.message;
  }
  if (Object.keys(errors).length > 0 || !config) return { errors };
  return {
    draft: { name: f.name.trim(), config, secret: f.kind === 's3' && f.secret ? f.secret : undefined },
    ...(editing ? {} : { weight }),
    errors,
  };
}
