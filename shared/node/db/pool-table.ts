import type { PoolPolicy, TargetState } from '../../pool-policy.ts';
import type { Db } from './db.ts';

/** What the keystore keeps of the pool object it last read or wrote (secrets live in `targets`). */
export interface PoolState {
  /** The object's name, `pools/<generation>-<random>`. */
  key: string;
  generation: number;
  createdAt: string;
  nextId: number;
  policy: PoolPolicy;
}

/** The repository's pool as this machine knows it: the pool object's generation and each target's place. */
export class PoolTable {
  constructor(private readonly db: Db) {}

  state(): PoolState | null {
    const row = this.db.prepare('SELECT pool FROM repository WHERE id = 1').get() as
      { pool: string | null } | undefined;
    return row?.pool ? (JSON.parse(row.pool) as PoolState) : null;
  }

  setState(s: PoolState | null): void {
    this.db.prepare('UPDATE repository SET pool = ? WHERE id = 1').run(s === null ? null : JSON.stringify(s));
  }

  setPlace(targetId: number, place: { poolId: number; weight: number; state: TargetState }): void {
    this.db
      .prepare('UPDATE targets SET pool_id = ?, weight = ?, state = ? WHERE id = ?')
      .run(place.poolId, place.weight, place.state, targetId);
  }

  /** The target has no place in the pool (yet): a publish that gave it one did not reach the members. */
  clearPlace(targetId: number): void {
    this.db.prepare('UPDATE targets SET pool_id = NULL WHERE id = ?').run(targetId);
  }

  setWeight(targetId: number, weight: number): void {
    this.db.prepare('UPDATE targets SET weight = ? WHERE id = ?').run(weight, targetId);
  }

  /** The local target a pool id names, if this machine knows it. */
  localId(poolId: number): number | undefined {
    return (
      this.db.prepare('SELECT id FROM targets WHERE pool_id = ?').get(poolId) as { id: number } | undefined
    )?.id;
  }
}
