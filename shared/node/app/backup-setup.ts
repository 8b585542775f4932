import { ApiCallError, type Request, type Responses } from '../../api/contract.ts';
import { SUGGESTED_EXCLUDES } from '../../plans.ts';
import { ExcludePatternError, previewBackup, SourceError } from '../engine/exports.ts';
import type { Engine } from '../engine/engine.ts';

type SetupMethod = 'backup.preview' | 'backup.excludes';
type SetupHandlers = { [M in SetupMethod]: (req: Request<M>) => Promise<Responses[M]> | Responses[M] };

/** Keystore setting: the exclude patterns of the last backup started from the app. */
const ADHOC_EXCLUDE_KEY = 'adhocExclude';

/**
 * Before a backup started by hand: the patterns to leave out (those of the last one, remembered) and a
 * preview of what it would hold and leave out, counted on disk.
 */
export function backupSetupHandlers(deps: { engine: () => Engine }): SetupHandlers {
  return {
    'backup.preview': async ({ sources, exclude }) => {
      try {
        return await previewBackup(sources, exclude, { suggest: SUGGESTED_EXCLUDES });
      } catch (err) {
        if (err instanceof SourceError) throw new ApiCallError(err.message, 'sources');
        if (err instanceof ExcludePatternError) throw new ApiCallError(err.message, 'exclude');
        throw err;
      }
    },
    'backup.excludes': () => ({
      patterns: deps.engine().local.getSetting<string[]>(ADHOC_EXCLUDE_KEY) ?? [],
      suggested: SUGGESTED_EXCLUDES,
    }),
  };
}

/** The patterns a backup started by hand used: the next one starts from them. */
export function rememberExcludes(e: Engine, patterns: readonly string[] | undefined): void {
  e.local.setSetting(ADHOC_EXCLUDE_KEY, patterns ?? []);
}
