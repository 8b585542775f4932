import { POOL_MAX_TARGETS } from '../../limits.ts';
import path from 'node:path';
import { targetNameSchema, targetWhere, type TargetConfig } from '../../settings.ts';
import { SameStorageError } from '../repository/locks.ts';
import { Repository } from '../repository/repository.ts';
import { openTarget, type TargetHandle } from '../storage/open-target.ts';
import { SettingsError, check, checkNewTarget, checkWeight } from '../home-and-settings.ts';
import type { LocalDb, TargetRow } from '../db/local-db.ts';

/** Whether two targets' settings name the same folder, or the same bucket of the same endpoint. */
function sameStore(a: TargetConfig, b: TargetConfig): boolean {
  if (a.kind === 'dir' && b.kind === 'dir') return path.resolve(a.path) === path.resolve(b.path);
  if (a.kind === 's3' && b.kind === 's3')
    return a.bucket === b.bucket && a.endpoint.replace(/\/+$/, '') === b.endpoint.replace(/\/+$/, '');
  return false;
}

/** The repository's targets: added and edited only after proving what they hold. */
export class TargetAdmin {
  constructor(
    private readonly ks: LocalDb,
    private readonly repo: Repository,
  ) {}

  /**
   * Adds a target after proving it works and holds this repository (or is empty: then it is set up).
   * `weight`: its share of the pool's packs, relative to the others (default 100: capacity or quota).
   */
  async add(
    name: string,
    config: TargetConfig,
    secret?: string,
    opts: { test?: boolean; weight?: number } = {},
  ): Promise<TargetRow> {
    check(targetNameSchema, name);
    const weight = checkWeight(opts.weight ?? 100);
    const parsed = checkNewTarget(config);
    if (this.ks.findTarget(name)) throw new SettingsError(`A target named "${name}" already exists.`);
    // A member another machine removed ('gone') is no longer in the pool.
    if (this.ks.listTargets().filter((t) => t.state !== 'gone').length >= POOL_MAX_TARGETS)
      throw new SettingsError(
        `A pool has at most ${POOL_MAX_TARGETS} targets; remove one ("cairn target drain", then "target rm") before adding "${name}".`,
      );
    const same = this.ks.listTargets().find((t) => sameStore(t.config, parsed));
    if (same)
      throw new SettingsError(`${targetWhere(parsed)} is already target "${same.name}" of this repository.`);
    if (parsed.kind === 's3' && !secret) throw new SettingsError('An S3 target needs a secret access key.');
    if (opts.test !== false) await this.testHandle({ id: 0, name, config: parsed, secret });
    const t = this.ks.addTarget(name, parsed, secret);
    this.ks.poolTable.setWeight(t.id, weight);
    if (opts.test === false) return this.ks.targetById(t.id);
    try {
      await this.repo.attach(t);
      await this.repo.refresh(t);
    } catch (err) {
      this.repo.forget(t.id);
      this.ks.removeTarget(t.id, { forgetPacks: true });
      throw err;
    }
    try {
      await this.publishPool(
        `Target "${name}" was added`,
        `; it joins the pool once every member takes the pool object: the next backup or "cairn check" with every member in reach writes it ("cairn target rm ${name}" undoes the add)`,
      );
    } catch (same) {
      if (!(same instanceof SameStorageError)) throw same;
      // Taken as a second target, its copies would share the first's fate, unseen.
      this.repo.forget(t.id);
      this.ks.removeTarget(t.id, { forgetPacks: true });
      throw aliasError(parsed, name, same, 'nothing was added');
    }
    return this.ks.targetById(t.id);
  }

  /**
   * Every target of a pool knows the others (pool object): written once a repository has two targets,
   * and after every change to one. The change itself stands if this fails; the next refresh or change
   * writes the pool where it is missing.
   */
  private async publishPool(done: string, next = ''): Promise<void> {
    if (this.ks.listTargets().length < 2 && !this.ks.poolTable.state()) return;
    try {
      await this.repo.publishPool({ waitMs: 30_000 });
    } catch (err) {
      if (err instanceof SameStorageError) throw err;
      const why = (err as Error).message.replace(/\.$/, '');
      throw new SettingsError(
        `${done}, but the pool object could not be written to every target (${why})${next}.`,
      );
    }
  }

  list(): TargetRow[] {
    return this.ks.listTargets();
  }

  get(name: string): TargetRow {
    const t = this.ks.findTarget(name);
    if (!t) throw new SettingsError(`No target named "${name}": "cairn target ls" lists them.`);
    return t;
  }

  async test(name: string): Promise<void> {
    await this.testHandle(this.ks.targetHandle(this.get(name)));
  }

  /** Tests an unsaved target; an empty secret means "the one saved for `replacing`". */
  async testDraft(name: string, config: TargetConfig, secret?: string, replacing?: string): Promise<void> {
    const parsed = checkNewTarget(config);
    const saved = replacing ? this.ks.targetHandle(this.get(replacing)).secret : undefined;
    await this.testHandle({ id: 0, name, config: parsed, secret: secret || saved });
  }

  private async testHandle(h: TargetHandle): Promise<void> {
    const s = openTarget(h, {});
    try {
      await s.check();
    } finally {
      s.close();
    }
  }

  default(): TargetRow {
    const targets = this.ks.listTargets();
    if (targets.length === 0) throw new SettingsError('No target yet: add one with "cairn target add".');
    // In a pool a backup writes where placement says; the target it names only takes metadata first.
    const member = this.ks.poolTable.state()
      ? targets
          .filter((t) => t.poolId !== null && t.state === 'active')
          .sort((a, b) => a.poolId! - b.poolId!)[0]
      : undefined;
    if (member) return member;
    if (targets.length > 1)
      throw new SettingsError(`There are ${targets.length} targets: choose one with --target <name>.`);
    return targets[0]!;
  }

  /** Changes a target in place (name, endpoint, keys…); it is tested and its repository checked first. */
  async replace(
    current: string,
    name: string,
    config: TargetConfig,
    secret?: string,
    opts: { test?: boolean } = {},
  ): Promise<TargetRow> {
    const existing = this.get(current);
    check(targetNameSchema, name);
    const parsed = checkNewTarget(config);
    if (name !== current && this.ks.findTarget(name))
      throw new SettingsError(`A target named "${name}" already exists.`);
    const keepSecret = secret === undefined || secret === '';
    const effective = keepSecret ? this.ks.targetHandle(existing).secret : secret;
    if (parsed.kind === 's3' && !effective)
      throw new SettingsError('An S3 target needs a secret access key.');
    if (opts.test !== false)
      await this.testHandle({ id: existing.id, name, config: parsed, secret: effective });
    if (opts.test !== false) {
      // What the edited target holds is proven now (another repository is refused by name) and its
      // packs are listed again before the next backup trusts any of them.
      const probe = new Repository(this.ks);
      try {
        // Outside a pool an empty bucket is set up (the target moved; its packs count as missing); a pool
        // member pointed at an empty bucket is refused (attach), as a member that lost its bucket is.
        await probe.attach(
          { ...existing, name, config: parsed, id: existing.id },
          { handle: { id: existing.id, name, config: parsed, secret: effective } },
        );
      } finally {
        probe.close();
      }
    }
    const before = this.ks.targetHandle(existing).secret;
    const updated = this.ks.updateTarget(existing.id, name, parsed, effective);
    this.repo.forget(existing.id);
    try {
      if (opts.test !== false) await this.publishPool(`Target "${name}" was changed`);
    } catch (same) {
      if (!(same instanceof SameStorageError)) throw same;
      this.ks.updateTarget(existing.id, existing.name, existing.config, before);
      this.repo.forget(existing.id);
      throw aliasError(parsed, name, same, `"${current}" was not changed`);
    }
    return updated;
  }

  /**
   * Removes a target. In a pool it is refused while the target holds copies or shards the index names
   * (drain moves them first) or while the others are too few for the policy; `force` (a target that is
   * lost) removes it anyway, forgetting packs that were only there, for repair or the next backup to
   * write again.
   */
  async remove(name: string, opts: { force?: boolean } = {}): Promise<void> {
    const t = this.get(name);
    const plans = this.ks.plans.usingTarget(t.id);
    if (plans.length)
      throw new SettingsError(
        `Plan${plans.length === 1 ? '' : 's'} ${plans.map((p) => `"${p}"`).join(', ')} back${plans.length === 1 ? 's' : ''} up to this target: change or remove ${plans.length === 1 ? 'it' : 'them'} first.`,
      );
    const policy = this.ks.poolTable.state()?.policy;
    if (policy && t.poolId !== null && !opts.force) {
      let copies = 0;
      let shards = 0;
      for (const p of this.ks.index.packsOnTarget(t.id).values())
        if (p.state === 'stored') {
          if (p.ec) shards++;
          else copies++;
        }
      const lost = `If it is lost, "cairn target rm ${name} --force" removes it; "cairn repair" then writes again what it held.`;
      if (copies + shards > 0) {
        const held = [
          copies ? `${copies} ${copies === 1 ? 'copy' : 'copies'}` : '',
          shards ? `${shards} ${shards === 1 ? 'shard' : 'shards'}` : '',
        ]
          .filter(Boolean)
          .join(' and ');
        throw new SettingsError(
          `Target "${name}" holds ${held} of the repository's packs: "cairn target drain ${name}" moves them to the other targets first. ${lost}`,
        );
      }
      const active = this.ks.listTargets().filter((x) => x.state === 'active' && x.id !== t.id).length;
      const needed = policy.scheme === 'replicas' ? policy.copies : policy.k + policy.m;
      if (active < needed)
        throw new SettingsError(
          `Without "${name}" the pool has ${active} active target${active === 1 ? '' : 's'}, and the policy (${policy.scheme === 'replicas' ? `${policy.copies} copies` : `${policy.k}+${policy.m}`}) needs ${needed}: add one first, or change the policy ("cairn policy"). ${lost}`,
        );
    }
    this.ks.removeTarget(t.id, { forgetPacks: opts.force });
    this.repo.forget(t.id);
    await this.publishPool(`Target "${name}" was removed`);
  }
}

/** A target that is another member under a new name (SameStorageError), said with what was undone. */
function aliasError(
  parsed: TargetConfig,
  name: string,
  same: SameStorageError,
  undone: string,
): SettingsError {
  const other = same.target === name ? same.sameAs : same.target;
  return new SettingsError(
    `${targetWhere(parsed)} is target "${other}" under another name (a lock written through "${other}" shows there): ${undone}.`,
  );
}
