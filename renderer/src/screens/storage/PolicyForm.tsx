import { useState } from 'react';
import type { PoolView } from '../../../../shared/api/views.ts';
import { describePolicy, policyChangeText, type PolicyView } from '../../../../shared/pool-text.ts';
import { getApi } from '../../api/bridge.ts';
import { messageOf } from '../../api/format.ts';

const sentence = (s: string) => s.charAt(0).toUpperCase() + s.slice(1) + '.';

/** A policy as drafted: the same shape as the pool's, with numbers kept consistent. */
function fit(p: PolicyView, active: number): PolicyView {
  if (p.scheme === 'replicas') {
    const copies = Math.min(Math.max(1, p.copies), Math.min(3, Math.max(1, active)));
    return { scheme: 'replicas', copies, writeQuorum: Math.min(Math.max(1, p.writeQuorum), copies) };
  }
  const k = Math.min(Math.max(2, p.k), Math.max(2, active - 1));
  const m = Math.min(Math.max(1, p.m), Math.max(1, active - k));
  return { scheme: 'ec', k, m, writeQuorum: Math.min(Math.max(k, p.writeQuorum), k + m) };
}

const range = (from: number, to: number) =>
  Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

function NumberSelect(props: {
  label: string;
  value: number;
  options: number[];
  word?: (n: number) => string;
  onChange: (n: number) => void;
}) {
  return (
    <select
      aria-label={props.label}
      value={props.value}
      onChange={(e) => props.onChange(Number(e.target.value))}
    >
      {props.options.map((n) => (
        <option key={n} value={n}>
          {props.word ? props.word(n) : n}
        </option>
      ))}
    </select>
  );
}

const copiesWord = (n: number) => (n === 1 ? '1 copy' : `${n} copies`);
const shardsWord = (n: number) => (n === 1 ? '1 shard' : `${n} shards`);

/**
 * The redundancy policy in plain words, and a change to it: whole copies (how many) or erasure coding
 * (k data + m parity shards), and how many a backup waits for; what the change costs and survives is
 * said, and only "Apply" sends it.
 */
export function PolicyForm({ pool, onSaved }: { pool: PoolView; onSaved: (p: PoolView) => void }) {
  const active = pool.activeTargets;
  const [draft, setDraft] = useState<PolicyView>(pool.policy);
  const [error, setError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const changed = JSON.stringify(draft) !== JSON.stringify(pool.policy);
  const edit = (p: PolicyView) => setDraft(fit(p, active));

  const apply = async () => {
    setError(null);
    setSaving(true);
    try {
      const body =
        draft.scheme === 'ec'
          ? { ec: { k: draft.k, m: draft.m }, writeQuorum: draft.writeQuorum }
          : { replicas: draft.copies, writeQuorum: draft.writeQuorum };
      onSaved(await getApi().invoke('pool.setPolicy', body));
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setSaving(false);
    }
  };
  const reset = () => {
    setDraft(pool.policy);
    setError(null);
  };

  return (
    <div className="card form policy" data-testid="policy">
      <p className="policy-text" data-testid="policy-text">
        {sentence(describePolicy(pool.policy))}
      </p>
      {!pool.pooled ? (
        <p className="muted small">
          With one target there is one copy of each pack. Add a second bucket or folder (Settings) to keep
          copies on both.
        </p>
      ) : (
        <>
          <div className="row wrap">
            <label className="inline">
              Store each pack as
              <select
                aria-label="Scheme"
                value={draft.scheme}
                onChange={(e) =>
                  edit(
                    e.target.value === 'ec'
                      ? {
                          scheme: 'ec',
                          k: Math.max(2, active - 2),
                          m: active >= 4 ? 2 : 1,
                          writeQuorum: active,
                        }
                      : // As "cairn policy --replicas 2": a backup waits for every copy.
                        { scheme: 'replicas', copies: 2, writeQuorum: 2 },
                  )
                }
              >
                <option value="replicas">whole copies</option>
                <option value="ec" disabled={active < 3}>
                  erasure-coded shards{active < 3 ? ' (3 targets or more)' : ''}
                </option>
              </select>
            </label>
          </div>
          {draft.scheme === 'replicas' ? (
            <div className="row wrap">
              <label className="inline">
                Keep
                <NumberSelect
                  label="Copies"
                  value={draft.copies}
                  options={range(1, Math.min(3, Math.max(1, active)))}
                  word={copiesWord}
                  // Waiting for every copy stays so (the CLI's default) when the number changes.
                  onChange={(copies) =>
                    edit({
                      ...draft,
                      copies,
                      writeQuorum: draft.writeQuorum >= draft.copies ? copies : draft.writeQuorum,
                    })
                  }
                />
                of each pack; a backup waits for
                <NumberSelect
                  label="Write quorum"
                  value={draft.writeQuorum}
                  options={range(1, draft.copies)}
                  word={copiesWord}
                  onChange={(writeQuorum) => edit({ ...draft, writeQuorum })}
                />
              </label>
            </div>
          ) : (
            <div className="row wrap">
              <label className="inline">
                Cut each pack into
                <NumberSelect
                  label="Data shards"
                  value={draft.k}
                  options={range(2, active - 1)}
                  onChange={(k) => edit({ ...draft, k })}
                />
                data and
                <NumberSelect
                  label="Parity shards"
                  value={draft.m}
                  options={range(1, active - draft.k)}
                  onChange={(m) => edit({ ...draft, m })}
                />
                parity shards, each on its own target; a backup waits for
                <NumberSelect
                  label="Write quorum"
                  value={draft.writeQuorum}
                  options={range(draft.k, draft.k + draft.m)}
                  word={shardsWord}
                  onChange={(writeQuorum) => edit({ ...draft, writeQuorum })}
                />
              </label>
            </div>
          )}
          {changed && (
            <div
              className="policy-change"
              data-testid="policy-change"
              role="region"
              aria-label="What changes"
            >
              <strong>If you apply this:</strong>
              <ul>
                {policyChangeText(pool.policy, draft, {
                  activeTargets: active,
                  storedBytes: pool.storedBytes,
                }).map((line) => (
                  <li key={line}>{line}</li>
                ))}
              </ul>
              <div className="actions start">
                <button type="button" className="primary" disabled={saving} onClick={() => void apply()}>
                  {saving ? 'Applying…' : 'Apply new policy'}
                </button>
                <button type="button" disabled={saving} onClick={reset}>
                  Keep the current one
                </button>
              </div>
            </div>
          )}
        </>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
