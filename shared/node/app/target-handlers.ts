import { StorageError } from '../engine/exports.ts';
import type { Request, Responses } from '../../api/contract.ts';
import type { TargetView } from '../../api/views.ts';
import type { Engine } from '../engine/engine.ts';

type TargetMethod = 'targets.list' | 'targets.test' | 'targets.save' | 'targets.remove';
type TargetHandlers = { [M in TargetMethod]: (req: Request<M>) => Promise<Responses[M]> | Responses[M] };

/** Settings' targets: list, test (a draft or a saved one), add or replace, remove. */
export function targetHandlers(engine: () => Engine): TargetHandlers {
  return {
    'targets.list': () => engine().listTargets().map(targetView),
    'targets.test': async ({ draft, name, replacing }) => {
      try {
        if (draft) await engine().testDraft(draft.name, draft.config, draft.secret, replacing);
        else await engine().testTarget(name ?? '');
        return { ok: true } as const;
      } catch (err) {
        // A target that does not work is an answer, not a failure of the call.
        if (err instanceof StorageError)
          return { ok: false, problem: err.problem, message: err.message } as const;
        throw err;
      }
    },
    'targets.save': async ({ draft, replacing, weight }) =>
      targetView(
        replacing
          ? await engine().replaceTarget(replacing, draft.name, draft.config, draft.secret)
          : await engine().addTarget(draft.name, draft.config, draft.secret, { weight }),
      ),
    'targets.remove': async ({ name }) => {
      await engine().removeTarget(name);
      return { removed: name };
    },
  };
}

function targetView(t: { name: string; config: TargetView['config']; hasSecret: boolean }): TargetView {
  return { name: t.name, config: t.config, hasSecret: t.hasSecret };
}
