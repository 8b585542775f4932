import { useState } from 'react';
import { ApiCallError } from '../../../../shared/api/contract.ts';
import type { TargetView, TestResult } from '../../../../shared/api/views.ts';
import { getApi } from '../../api/bridge.ts';
import { Field } from '../../components/Field.tsx';
import { messageOf } from '../../api/format.ts';
import {
  emptyFields,
  fieldsFrom,
  validateTarget,
  type FieldErrors,
  type TargetFields,
} from './target-form.ts';

/** Add or edit a target, with inline validation, "Test connection", and a save that tests first. */
export function TargetForm(props: { editing: TargetView | null; onSaved: () => void; onCancel: () => void }) {
  const [f, setF] = useState<TargetFields>(props.editing ? fieldsFrom(props.editing) : emptyFields);
  const [errors, setErrors] = useState<FieldErrors>({});
  const [test, setTest] = useState<TestResult | null>(null);
  const [busy, setBusy] = useState<'test' | 'save' | null>(null);
  const [saveError, setSaveError] = useState<string | null>(null);
  const set = <K extends keyof TargetFields>(k: K, v: TargetFields[K]) => {
    setF((x) => ({ ...x, [k]: v }));
    setErrors((e) => ({ ...e, [k]: undefined }));
    // The last test or save said something about the old values: it no longer holds.
    setTest(null);
    setSaveError(null);
  };
  const replacing = props.editing?.name;

  const run = async (what: 'test' | 'save') => {
    const { draft, weight, errors: errs } = validateTarget(f, props.editing !== null);
    setErrors(errs);
    setSaveError(null);
    setTest(null);
    if (!draft) return;
    setBusy(what);
    try {
      if (what === 'test') setTest(await getApi().invoke('targets.test', { draft, replacing }));
      else {
        await getApi().invoke('targets.save', { draft, replacing, weight });
        props.onSaved();
      }
    } catch (e) {
      // A refusal that names a field ("path" from the engine, "draft.config.path" from the bridge) is
      // shown at it.
      const field = e instanceof ApiCallError ? e.field?.split('.').pop() : undefined;
      if (field && field in f) setErrors({ ...errs, [field]: messageOf(e) });
      else setSaveError(messageOf(e));
    } finally {
      setBusy(null);
    }
  };

  const text = (
    k: 'name' | 'endpoint' | 'region' | 'bucket' | 'accessKeyId' | 'path' | 'weight',
    label: string,
    placeholder = '',
    hint?: string,
  ) => (
    <Field label={label} hint={hint} error={errors[k]}>
      {(c) => (
        <input {...c} value={f[k]} placeholder={placeholder} onChange={(e) => set(k, e.target.value)} />
      )}
    </Field>
  );

  return (
    <form
      className="card form target-form"
      aria-label={props.editing ? `Edit target ${props.editing.name}` : 'Add a target'}
      onSubmit={(e) => (e.preventDefault(), void run('save'))}
    >
      <h3>{props.editing ? `Edit “${props.editing.name}”` : 'Add a target'}</h3>
      <div className="grid2">
        {text('name', 'Name', 'my-bucket')}
        <Field label="Kind">
          {(c) => (
            <select {...c} value={f.kind} onChange={(e) => set('kind', e.target.value as 's3' | 'dir')}>
              <option value="s3">S3-compatible bucket</option>
              <option value="dir">Local folder</option>
            </select>
          )}
        </Field>
        {f.kind === 's3' ? (
          <>
            {text('endpoint', 'Endpoint', 'https://s3.eu-west-1.amazonaws.com')}
            {text('region', 'Region', 'us-east-1')}
            {text('bucket', 'Bucket', 'my-backups')}
            {text('accessKeyId', 'Access key id')}
            <Field label="Secret access key" hint="Stored encrypted in the keystore." error={errors.secret}>
              {(c) => (
                <input
                  {...c}
                  type="password"
                  autoComplete="off"
                  value={f.secret}
                  placeholder={props.editing ? 'unchanged' : ''}
                  onChange={(e) => set('secret', e.target.value)}
                />
              )}
            </Field>
            <Field label="Checksums" error={errors.checksums}>
              {(c) => (
                <select
                  {...c}
                  value={f.checksums}
                  onChange={(e) => set('checksums', e.target.value as TargetFields['checksums'])}
                >
                  <option value="when-supported">CRC32 checksums (default)</option>
                  <option value="when-required">Only when required</option>
                </select>
              )}
            </Field>
            <label className="inline check">
              <input
                type="checkbox"
                checked={f.pathStyle}
                onChange={(e) => set('pathStyle', e.target.checked)}
              />{' '}
              Path-style addressing (MinIO, Garage, most self-hosted servers)
            </label>
          </>
        ) : (
          text('path', 'Folder', '/media/backup-drive/cairn', 'A backup drive or a mounted share.')
        )}
        {!props.editing &&
          text(
            'weight',
            'Weight',
            '100',
            'Its share of the packs beside the other targets: 200 takes twice as many as 100.',
          )}
      </div>
      {test && (
        <p className={test.ok ? 'success' : 'error'} role="status" data-testid="test-result">
          {test.ok
            ? f.kind === 's3'
              ? 'Connection works: the credentials are accepted and the bucket is there.'
              : 'The folder works: Cairn can read and write in it.'
            : test.message}
        </p>
      )}
      {saveError && (
        <p className="error" role="alert" data-testid="save-error">
          {saveError}
        </p>
      )}
      <div className="actions">
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="button" disabled={busy !== null} onClick={() => void run('test')}>
          {busy === 'test' ? 'Testing…' : 'Test connection'}
        </button>
        <button type="submit" className="primary" disabled={busy !== null}>
          {busy === 'save' ? 'Saving…' : 'Save'}
        </button>
      </div>
    </form>
  );
}
