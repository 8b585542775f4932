import { useState } from 'react';
import type { AppStatus } from '../../../shared/api/views.ts';
import { getApi } from '../api/bridge.ts';
import { Field } from '../components/Field.tsx';
import { messageOf } from '../api/format.ts';
import { emptyFields, validateTarget, type FieldErrors, type TargetFields } from './settings/target-form.ts';

/**
 * "Open existing backups": the bucket (or folder) that holds a repository, and the passphrase or the
 * recovery key. Everything else (keys, index, snapshots) comes from the bucket.
 */
export function ConnectForm({
  onConnected,
  onBack,
}: {
  onConnected: (s: AppStatus) => void;
  onBack: () => void;
}) {
  const [f, setF] = useState<TargetFields>({ ...emptyFields, name: 'backups' });
  const [errors, setErrors] = useState<FieldErrors>({});
  const [useRecovery, setUseRecovery] = useState(false);
  const [secret, setSecret] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const set = <K extends keyof TargetFields>(k: K, v: TargetFields[K]) => {
    setF((x) => ({ ...x, [k]: v }));
    setErrors((e) => ({ ...e, [k]: undefined }));
  };
  const text = (
    k: 'endpoint' | 'region' | 'bucket' | 'accessKeyId' | 'path',
    label: string,
    placeholder = '',
  ) => (
    <Field label={label} error={errors[k]}>
      {(c) => (
        <input {...c} value={f[k]} placeholder={placeholder} onChange={(e) => set(k, e.target.value)} />
      )}
    </Field>
  );

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    const { draft, errors: errs } = validateTarget(f, false);
    setErrors(errs);
    setError(null);
    if (!draft) return;
    setBusy(true);
    try {
      onConnected(
        await getApi().invoke('app.connect', {
          draft,
          ...(useRecovery ? { recoveryKey: secret } : { passphrase: secret }),
        }),
      );
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="card unlock-card" aria-label="Open existing backups" onSubmit={submit}>
      <h1>Open existing backups</h1>
      <p className="muted">
        Where your backups are, and the passphrase or recovery key that opens them. Nothing else is needed:
        the keys, the index and the list of backups are read from there.
      </p>
      <div className="segmented" role="radiogroup" aria-label="Where">
        {(['s3', 'dir'] as const).map((k) => (
          <label key={k}>
            <input type="radio" name="kind" checked={f.kind === k} onChange={() => set('kind', k)} />
            {k === 's3' ? 'S3 bucket' : 'Folder'}
          </label>
        ))}
      </div>
      {f.kind === 's3' ? (
        <>
          {text('endpoint', 'Endpoint', 'https://s3.eu-west-1.amazonaws.com')}
          {text('region', 'Region')}
          {text('bucket', 'Bucket')}
          {text('accessKeyId', 'Access key id')}
          <Field label="Secret access key" error={errors.secret}>
            {(c) => (
              <input
                {...c}
                type="password"
                autoComplete="off"
                value={f.secret}
                onChange={(e) => set('secret', e.target.value)}
              />
            )}
          </Field>
          <label className="check">
            <input
              type="checkbox"
              checked={f.pathStyle}
              onChange={(e) => set('pathStyle', e.target.checked)}
            />{' '}
            Path-style addressing (MinIO, Garage, versitygw)
          </label>
        </>
      ) : (
        text('path', 'Folder', '/media/backup-drive/cairn')
      )}
      <label>
        {useRecovery ? 'Recovery key' : 'Passphrase'}
        <input
          type="password"
          autoComplete={useRecovery ? 'off' : 'current-password'}
          value={secret}
          onChange={(e) => setSecret(e.target.value)}
        />
      </label>
      <button type="button" className="link" onClick={() => setUseRecovery((x) => !x)}>
        {useRecovery ? 'Use the passphrase instead' : 'Use the recovery key instead'}
      </button>
      {busy && (
        <p className="muted" role="status">
          <progress /> Checking the key and reading the list of backups…
        </p>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div className="row">
        <button type="button" onClick={onBack} disabled={busy}>
          Back
        </button>
        <button type="submit" className="primary" disabled={busy || secret.length === 0}>
          {busy ? 'Opening…' : 'Open backups'}
        </button>
      </div>
    </form>
  );
}
