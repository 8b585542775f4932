import { useEffect, useState } from 'react';
import {
  downloadLimitSchema,
  formatMinuteOfDay as hhmm,
  parseLimitHours,
  parseRate,
  uploadLimitSchema,
  type LimitHours,
} from '../../../../shared/settings.ts';
import type { SettingsView } from '../../../../shared/api/views.ts';
import { getApi } from '../../api/bridge.ts';
import { Field } from '../../components/Field.tsx';
import { formatSizeExact, messageOf } from '../../api/format.ts';

type Errors = Partial<Record<'uploadLimit' | 'downloadLimit' | 'limitHours', string>>;

/** Empty: no cap. "5MiB" or "5MiB/s": bytes a second; NaN when it is not a size. */
function rateOf(text: string): number {
  const t = text.trim();
  return t === '' ? 0 : parseRate(t);
}

function checkRate(text: string, schema: typeof uploadLimitSchema): string | undefined {
  const n = rateOf(text);
  if (Number.isNaN(n)) return `“${text}” is not a size a second (examples: 5MiB, 800KiB).`;
  const r = schema.safeParse(n);
  return r.success ? undefined : r.error.issues[0]?.message;
}

/**
 * Upload and download caps for every run (a plan may set its own upload cap), and optionally the hours
 * of the day they hold in: outside them, runs go as fast as the link allows.
 */
export function BandwidthForm({
  settings,
  onSaved,
}: {
  settings: SettingsView;
  onSaved: (s: SettingsView) => void;
}) {
  const [upload, setUpload] = useState(settings.uploadLimit ? formatSizeExact(settings.uploadLimit) : '');
  const [download, setDownload] = useState(
    settings.downloadLimit ? formatSizeExact(settings.downloadLimit) : '',
  );
  const [windowed, setWindowed] = useState(!!settings.limitHours);
  const [from, setFrom] = useState(hhmm(settings.limitHours?.from ?? 8 * 60));
  const [to, setTo] = useState(hhmm(settings.limitHours?.to ?? 18 * 60));
  const [errors, setErrors] = useState<Errors>({});
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  useEffect(() => setMessage(null), [upload, download, windowed, from, to]);
  const edit = (k: keyof Errors, set: (v: string) => void) => (e: React.ChangeEvent<HTMLInputElement>) => {
    set(e.target.value);
    setErrors((x) => ({ ...x, [k]: undefined }));
  };

  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    let hours: LimitHours | null = null;
    const errs: Errors = {
      uploadLimit: checkRate(upload, uploadLimitSchema),
      downloadLimit: checkRate(download, downloadLimitSchema),
    };
    if (windowed) {
      hours = parseLimitHours(`${from}-${to}`);
      if (!hours) errs.limitHours = 'Give a start and an end time that differ, such as 08:00 and 18:00.';
    }
    const found = Object.fromEntries(Object.entries(errs).filter(([, v]) => v)) as Errors;
    setErrors(found);
    if (Object.keys(found).length) return;
    try {
      const s = await getApi().invoke('settings.save', {
        uploadLimit: rateOf(upload),
        downloadLimit: rateOf(download),
        limitHours: hours,
      });
      setMessage({ ok: true, text: 'Saved.' });
      onSaved(s);
    } catch (err) {
      setMessage({ ok: false, text: messageOf(err) });
    }
  };

  return (
    <form className="card form" aria-label="Bandwidth limits" onSubmit={save}>
      <h3>Limits</h3>
      <div className="grid3">
        <Field
          label="Upload limit"
          hint="for every upload together, such as 5MiB; empty: as fast as the link goes"
          error={errors.uploadLimit}
        >
          {(c) => (
            <input {...c} value={upload} placeholder="no limit" onChange={edit('uploadLimit', setUpload)} />
          )}
        </Field>
        <Field
          label="Download limit"
          hint="restores and verifies, such as 20MiB; empty: no limit"
          error={errors.downloadLimit}
        >
          {(c) => (
            <input
              {...c}
              value={download}
              placeholder="no limit"
              onChange={edit('downloadLimit', setDownload)}
            />
          )}
        </Field>
      </div>
      <fieldset className="limit-hours">
        <label className="inline">
          <input type="checkbox" checked={windowed} onChange={(e) => setWindowed(e.target.checked)} /> Only
          between these hours (this computer's time); outside them, no limit
        </label>
        {windowed && (
          <div className="row">
            <label className="inline">
              From{' '}
              <input
                type="time"
                aria-label="Limits start at"
                value={from}
                onChange={edit('limitHours', setFrom)}
              />
            </label>
            <label className="inline">
              to{' '}
              <input type="time" aria-label="Limits end at" value={to} onChange={edit('limitHours', setTo)} />
            </label>
          </div>
        )}
        {errors.limitHours && (
          <small className="error" role="alert">
            {errors.limitHours}
          </small>
        )}
      </fieldset>
      {message && <p className={message.ok ? 'success' : 'error'}>{message.text}</p>}
      <div className="actions">
        <button type="submit" className="primary">
          Save limits
        </button>
      </div>
    </form>
  );
}
