import { useEffect, useState } from 'react';
import {
  chunkBufferBytes,
  chunkSizeSchema,
  parseSize,
  uploadsPerWorkerSchema,
  workersSchema,
} from '../../../../shared/settings.ts';
import type { SettingsView } from '../../../../shared/api/views.ts';
import { getApi } from '../../api/bridge.ts';
import { Field } from '../../components/Field.tsx';
import { formatSize, formatSizeExact, messageOf } from '../../api/format.ts';

type Errors = Partial<Record<'chunkSize' | 'workers' | 'uploadsPerWorker', string>>;

/** Chunk size, workers and uploads in flight, with the memory they imply and inline validation. */
export function PipelineForm({
  settings,
  onSaved,
}: {
  settings: SettingsView;
  onSaved: (s: SettingsView) => void;
}) {
  const [chunk, setChunk] = useState(formatSizeExact(settings.chunkSize));
  const [workers, setWorkers] = useState(String(settings.workers));
  const [uploads, setUploads] = useState(String(settings.uploadsPerWorker));
  const [errors, setErrors] = useState<Errors>({});
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  useEffect(() => setMessage(null), [chunk, workers, uploads]);
  // Editing a field drops its old error: the next check writes a fresh one instead of stacking.
  const edit = (k: keyof Errors, set: (v: string) => void) => (e: React.ChangeEvent<HTMLInputElement>) => {
    set(e.target.value);
    setErrors((x) => ({ ...x, [k]: undefined }));
  };

  const chunkBytes = parseSize(chunk);
  const parsed = {
    chunkSize: chunkSizeSchema.safeParse(chunkBytes),
    workers: workersSchema.safeParse(Number(workers)),
    uploadsPerWorker: uploadsPerWorkerSchema.safeParse(Number(uploads)),
  };
  const memory =
    parsed.chunkSize.success && parsed.workers.success && parsed.uploadsPerWorker.success
      ? chunkBufferBytes({
          workers: parsed.workers.data,
          uploadsPerWorker: parsed.uploadsPerWorker.data,
          chunkSize: parsed.chunkSize.data,
        })
      : null;

  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    const errs: Errors = {};
    if (Number.isNaN(chunkBytes)) errs.chunkSize = `“${chunk}” is not a size (examples: 8MiB, 512KiB).`;
    else if (!parsed.chunkSize.success) errs.chunkSize = parsed.chunkSize.error.issues[0]?.message;
    if (!parsed.workers.success) errs.workers = parsed.workers.error.issues[0]?.message;
    if (!parsed.uploadsPerWorker.success)
      errs.uploadsPerWorker = parsed.uploadsPerWorker.error.issues[0]?.message;
    setErrors(errs);
    if (Object.keys(errs).length) return;
    try {
      const s = await getApi().invoke('settings.save', {
        chunkSize: chunkBytes,
        workers: Number(workers),
        uploadsPerWorker: Number(uploads),
      });
      setMessage({ ok: true, text: 'Saved.' });
      onSaved(s);
    } catch (err) {
      setMessage({ ok: false, text: messageOf(err) });
    }
  };

  return (
    <form className="card form" aria-label="Pipeline settings" onSubmit={save}>
      <h3>Pipeline</h3>
      <div className="grid3">
        <Field label="Chunk size" hint="64 KiB to 1 GiB" error={errors.chunkSize}>
          {(c) => <input {...c} value={chunk} onChange={edit('chunkSize', setChunk)} />}
        </Field>
        <Field
          label="Worker threads"
          hint={`this computer has ${settings.cpuCount} CPU cores`}
          error={errors.workers}
        >
          {(c) => (
            <input {...c} type="number" min={1} value={workers} onChange={edit('workers', setWorkers)} />
          )}
        </Field>
        <Field
          label="Uploads in flight per worker"
          hint="parallel connections = workers × this"
          error={errors.uploadsPerWorker}
        >
          {(c) => (
            <input
              {...c}
              type="number"
              min={1}
              value={uploads}
              onChange={edit('uploadsPerWorker', setUploads)}
            />
          )}
        </Field>
      </div>
      {parsed.workers.success && parsed.workers.data > settings.cpuCount * 2 && (
        <p className="warning" data-testid="workers-warning">
          {parsed.workers.data} workers on {settings.cpuCount} CPU cores: each worker compresses and encrypts
          on a core of its own, so more than about {settings.cpuCount * 2} only adds memory and contention.
          Raise “uploads in flight” instead for slow links.
        </p>
      )}
      <p className="muted" data-testid="memory-estimate">
        {memory !== null
          ? `Chunk buffers will use about ${formatSize(memory)} of memory, whatever the file size.`
          : 'Fix the values above to see the memory they need.'}
      </p>
      {message && <p className={message.ok ? 'success' : 'error'}>{message.text}</p>}
      <div className="actions">
        <button type="submit" className="primary">
          Save settings
        </button>
      </div>
    </form>
  );
}
