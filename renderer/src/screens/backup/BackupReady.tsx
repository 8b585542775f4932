import { useEffect, useState } from 'react';
import { ApiCallError } from '../../../../shared/api/contract.ts';
import type { BackupPreviewView } from '../../../../shared/api/views.ts';
import { getApi } from '../../api/bridge.ts';
import { useQuery } from '../../api/hooks.ts';
import { counted, formatCount, formatSize, messageOf } from '../../api/format.ts';
import { Field } from '../../components/Field.tsx';
import './backup.css';

const lines = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);

/** How long typing pauses before the preview is counted again. */
const PREVIEW_DELAY_MS = 400;

/**
 * Files and folders chosen for a backup, before it starts: what to leave out (the last backup's
 * patterns, with suggestions that match something here) and a preview of what it will hold and leave
 * out, counted on disk. Nothing is read or uploaded until "Back up".
 */
export function BackupReady(props: {
  sources: string[];
  starting: boolean;
  onSources: (sources: string[]) => void;
  onStart: (exclude: string[]) => Promise<void>;
  onCancel: () => void;
}) {
  const remembered = useQuery('backup.excludes', {});
  const [text, setText] = useState<string | null>(null);
  const exclude = lines(text ?? '');
  useEffect(() => {
    if (text === null && (remembered.data || remembered.error))
      setText(remembered.data?.patterns.join('\n') ?? '');
  }, [remembered.data, remembered.error, text]);
  // The preview follows the sources and the patterns, once typing pauses.
  const [asked, setAsked] = useState<{ sources: string[]; exclude: string[] } | null>(null);
  const key = JSON.stringify([props.sources, exclude]);
  useEffect(() => {
    if (text === null) return;
    const [sources, patterns] = JSON.parse(key) as [string[], string[]];
    const t = setTimeout(() => setAsked({ sources, exclude: patterns }), PREVIEW_DELAY_MS);
    return () => clearTimeout(t);
  }, [key, text]);
  const [preview, setPreview] = useState<BackupPreviewView | null>(null);
  const [errors, setErrors] = useState<{ exclude?: string; sources?: string; other?: string }>({});
  useEffect(() => {
    if (!asked) return;
    let live = true;
    // The last preview stays shown while the next is counted: the suggestions do not flicker.
    getApi()
      .invoke('backup.preview', asked)
      .then(
        (p) => live && (setPreview(p), setErrors({})),
        (e) => {
          if (!live) return;
          const field = e instanceof ApiCallError ? e.field : undefined;
          setErrors(
            field === 'exclude'
              ? { exclude: messageOf(e) }
              : field === 'sources'
                ? { sources: messageOf(e) }
                : { other: messageOf(e) },
          );
        },
      );
    return () => {
      live = false;
    };
  }, [asked]);

  const add = (pattern: string) => setText([...exclude, pattern].join('\n'));
  const offered = [
    ...(preview?.suggestions ?? []),
    ...(remembered.data?.suggested ?? [])
      .filter((s) => !preview?.suggestions.some((x) => x.pattern === s))
      .map((pattern) => ({ pattern, matches: 0 })),
  ].filter((s) => !exclude.includes(s.pattern));
  const start = async () => {
    try {
      await props.onStart(exclude);
    } catch (e) {
      const field = e instanceof ApiCallError ? e.field : undefined;
      setErrors(field === 'exclude' ? { exclude: messageOf(e) } : { other: messageOf(e) });
    }
  };

  return (
    <section className="card ready" aria-label="Ready to back up">
      <h2>Back up {counted(props.sources.length, 'item')}</h2>
      <ul className="ready-sources" aria-label="Chosen to back up">
        {props.sources.map((s) => (
          <li key={s}>
            <span className="path">{s}</span>
            {props.sources.length > 1 && (
              <button
                type="button"
                className="link"
                aria-label={`Remove ${s}`}
                onClick={() => props.onSources(props.sources.filter((x) => x !== s))}
              >
                Remove
              </button>
            )}
          </li>
        ))}
      </ul>
      {errors.sources && (
        <p className="error" role="alert">
          {errors.sources}
        </p>
      )}
      <Field
        label="Leave out"
        hint="one pattern per line: node_modules/ (a folder anywhere), *.tmp, /build (at the top of a source)"
        error={errors.exclude}
      >
        {(c) => <textarea {...c} rows={3} value={text ?? ''} onChange={(e) => setText(e.target.value)} />}
      </Field>
      {offered.length > 0 && (
        <div className="suggestions" aria-label="Suggested exclusions">
          <span className="muted">Suggested:</span>
          {offered.map((s) => (
            <button key={s.pattern} type="button" className="small" onClick={() => add(s.pattern)}>
              + {s.pattern}
              {s.matches > 0 && <span className="muted"> ({formatCount(s.matches)} here)</span>}
            </button>
          ))}
        </div>
      )}
      <PreviewText
        preview={preview}
        counting={!preview && !errors.exclude && !errors.sources && !errors.other}
      />
      {errors.other && (
        <p className="error" role="alert">
          {errors.other}
        </p>
      )}
      <div className="row">
        <button
          type="button"
          className="primary"
          disabled={props.starting || !!errors.exclude || !!errors.sources}
          onClick={() => void start()}
        >
          Back up
        </button>
        <button type="button" onClick={props.onCancel} disabled={props.starting}>
          Cancel
        </button>
      </div>
    </section>
  );
}

function PreviewText({ preview: p, counting }: { preview: BackupPreviewView | null; counting: boolean }) {
  if (!p)
    return counting ? (
      <p className="muted" data-testid="backup-preview">
        Counting what it holds…
      </p>
    ) : null;
  const about = p.partial ? 'at least ' : '';
  const out = p.leftOut;
  return (
    <div data-testid="backup-preview" className="preview">
      <p>
        Backs up {about}
        {counted(p.files, 'file')} ({formatSize(p.bytes)})
        {out.count > 0
          ? ` · leaves out ${about}${counted(out.files, 'file')} (${formatSize(out.bytes)}) in ${counted(out.count, 'place')}`
          : ' · leaves nothing out'}
        {p.partial && ' (still counting when it stopped: a very large source)'}
      </p>
      {p.unreadable.length > 0 && (
        <p className="error">Cannot read {p.unreadable.join(', ')}: the backup would stop there.</p>
      )}
      {out.entries.length > 0 && (
        <details>
          <summary>What is left out</summary>
          <ul className="left-out" aria-label="Left out">
            {out.entries.map((e) => (
              <li key={e.path}>
                <span className="path">
                  {e.path}
                  {e.kind === 'dir' ? '/' : ''}
                </span>{' '}
                <span className="muted">
                  {e.kind === 'dir' ? `${counted(e.files, 'file')}, ` : ''}
                  {formatSize(e.bytes)}
                </span>
              </li>
            ))}
            {out.count > out.entries.length && (
              <li className="muted">and {formatCount(out.count - out.entries.length)} more</li>
            )}
          </ul>
        </details>
      )}
    </div>
  );
}
