import { Option, type Command } from 'commander';
import type { PlanDraft } from '../../plans.ts';
import { describeKeep, KEEP_RULE_NAMES, keepPolicyIsEmpty, type KeepPolicyDraft } from '../../retention.ts';
import { describeSchedule, type Schedule } from '../../schedule.ts';
import { SettingsError, type PlanInfo } from '../engine/engine.ts';
import { reportBackup, table, type Output } from './output.ts';
import { keepOptionValues } from './retention-commands.ts';
import { withEngine } from './session.ts';
import { rateOption } from './settings-command.ts';

const planRate = rateOption('--limit-upload');

/** An edit's upload cap: the given one, none for "settings", else the plan's own. */
function uploadLimitOption(
  cur: number | undefined,
  given: number | null | undefined,
): { uploadLimit?: number } {
  const v = given === undefined ? cur : given;
  return v === null || v === undefined ? {} : { uploadLimit: v };
}

interface AddOpts {
  source: string[];
  target?: string;
  exclude: string[];
  every: string;
  at?: string;
  day?: string;
  chunkSize?: number;
  workers?: number;
  /** Bytes a second; null: the Settings value. */
  limitUpload?: number | null;
  keepLast?: number;
  keepHourly?: number;
  keepDaily?: number;
  keepWeekly?: number;
  keepMonthly?: number;
  keepYearly?: number;
}

/** Which option a plan field came from, so that an error names what the user typed. */
const OPTION_OF: Record<string, string> = {
  name: '<name>',
  sources: '--source',
  target: '--target',
  exclude: '--exclude',
  schedule: '--every',
  'schedule.every': '--every',
  'schedule.at': '--at',
  'schedule.day': '--day',
  chunkSize: '--chunk-size',
  workers: '--workers',
  uploadLimit: '--limit-upload',
  retention: '--keep-*',
  ...Object.fromEntries(KEEP_RULE_NAMES.map((r) => [`retention.${r}`, `--keep-${r}`])),
};

export function registerPlanCommands(
  program: Command,
  out: () => Output,
  parse: { size: (v: string) => number; int: (name: string) => (v: string) => number },
): void {
  const collect = (v: string, acc: string[]) => [...acc, v];
  const plan = program.command('plan').description('backup plans: sources, target, excludes, schedule');

  const planOptions = (c: Command, every: { default?: string }) => {
    const e = new Option('--every <period>', 'when it runs by itself').choices([
      'manual',
      'hourly',
      'daily',
      'weekly',
    ]);
    for (const r of KEEP_RULE_NAMES)
      c.addOption(
        new Option(
          `--keep-${r} <n>`,
          r === 'last'
            ? 'after each run, keep the n newest backups of this plan (0: drop the rule)'
            : `after each run, keep the newest backup of each of the last n ${UNIT[r]} (0: drop the rule)`,
        ).argParser(parse.int('Count')),
      );
    return c
      .option('--source <path>', 'a file or folder to back up (repeatable)', collect, [] as string[])
      .option('--target <name>', 'target to store on (needed when there are several)')
      .option('--exclude <glob>', 'leave out what matches (repeatable)', collect, [] as string[])
      .addOption(every.default ? e.default(every.default) : e)
      .option('--at <HH:MM>', 'time of day, for daily and weekly plans (local time)')
      .option('--day <day>', 'weekday for weekly plans: mon, tue, wed, thu, fri, sat, sun')
      .addOption(new Option('--chunk-size <size>', 'chunk size for this plan').argParser(parse.size))
      .addOption(
        new Option('--workers <n>', 'worker threads for this plan').argParser(parse.int('Worker count')),
      )
      .addOption(
        new Option(
          '--limit-upload <rate>',
          'cap this plan\'s uploads ("5MiB", "800KiB/s"; 0: no cap; "settings": the saved limit)',
        ).argParser((v) => (v.trim().toLowerCase() === 'settings' ? null : planRate(v))),
      );
  };

  planOptions(
    plan
      .command('add')
      .description('add a plan; while the app runs, it starts by itself when due')
      .argument('<name>'),
    { default: 'manual' },
  ).action(async (name: string, opts: AddOpts) => {
    const o = out();
    const draft: PlanDraft = {
      name,
      sources: opts.source,
      ...(opts.target !== undefined ? { target: opts.target } : {}),
      exclude: opts.exclude,
      schedule: scheduleFromOptions(opts),
      ...(opts.chunkSize !== undefined ? { chunkSize: opts.chunkSize } : {}),
      ...(opts.workers !== undefined ? { workers: opts.workers } : {}),
      ...(typeof opts.limitUpload === 'number' ? { uploadLimit: opts.limitUpload } : {}),
      ...retentionOption({}, opts),
    };
    const p = await withEngine(async (e) => namingOption(() => e.plans.save(draft)));
    o.result(p, `Added plan "${p.name}": ${describeSchedule(p.schedule).toLowerCase()}${due(p)}.`);
  });

  planOptions(
    plan
      .command('edit')
      .description('change a plan: each option given replaces that setting; its run history stays')
      .argument('<name>')
      .option('--rename <new-name>', 'a new name for the plan')
      .option('--no-exclude', 'back up everything again (drop all exclude patterns)'),
    {},
  ).action(async (name: string, opts: Partial<AddOpts> & { rename?: string; exclude: string[] | false }) => {
    const o = out();
    const p = await withEngine(async (e) => {
      const cur = e.plans.get(name);
      const schedule =
        opts.every !== undefined
          ? scheduleFromOptions({ ...opts, every: opts.every } as AddOpts)
          : opts.at !== undefined || opts.day !== undefined
            ? scheduleFromOptions({
                every: cur.schedule.every,
                at: opts.at ?? ('at' in cur.schedule ? cur.schedule.at : undefined),
                day: opts.day ?? (cur.schedule.every === 'weekly' ? cur.schedule.day : undefined),
              } as AddOpts)
            : cur.schedule;
      const draft: PlanDraft = {
        name: opts.rename ?? cur.name,
        sources: opts.source?.length ? opts.source : cur.sources,
        ...((opts.target ?? cur.target) !== undefined ? { target: opts.target ?? cur.target } : {}),
        exclude: opts.exclude === false ? [] : opts.exclude.length ? opts.exclude : cur.exclude,
        schedule,
        ...((opts.chunkSize ?? cur.chunkSize) !== undefined
          ? { chunkSize: opts.chunkSize ?? cur.chunkSize }
          : {}),
        ...((opts.workers ?? cur.workers) !== undefined ? { workers: opts.workers ?? cur.workers } : {}),
        ...uploadLimitOption(cur.uploadLimit, opts.limitUpload),
        ...retentionOption(cur.retention ?? {}, opts),
      };
      return namingOption(() => e.plans.save(draft, name));
    });
    o.result(p, `Changed plan "${p.name}": ${describeSchedule(p.schedule).toLowerCase()}${due(p)}.`);
  });

  plan
    .command('ls')
    .description('list plans with their last run and when they are next due')
    .action(async () => {
      const o = out();
      const plans = await withEngine(async (e) => e.plans.list());
      o.result(
        plans,
        plans.length === 0
          ? 'No plans yet: "cairn plan add <name> --source <path> --every daily --at 02:00".'
          : table([
              ['NAME', 'SCHEDULE', 'LAST RUN', 'NEXT DUE', 'RETENTION', 'SOURCES'],
              ...plans.map((p) => [
                p.name,
                describeSchedule(p.schedule),
                lastRunText(p),
                p.nextDueAt === null
                  ? '-'
                  : `${when(p.nextDueAt)}${p.nextDueAt <= Date.now() ? ' (due: runs when the app is open)' : ''}`,
                retentionText(p),
                p.sources.join(' ') + (p.exclude.length ? ` (excluding ${p.exclude.join(' ')})` : ''),
              ]),
            ]),
      );
    });

  plan
    .command('rm')
    .description('remove a plan (its snapshots stay)')
    .argument('<name>')
    .action(async (name: string) => {
      const o = out();
      await withEngine(async (e) => e.plans.remove(name));
      o.result({ removed: name }, `Removed plan "${name}"; its snapshots stay.`);
    });

  plan
    .command('run')
    .description('run a plan now, as a backup; prints the snapshot id')
    .argument('<name>')
    .action(async (name: string) => {
      const o = out();
      const r = await withEngine((e) => e.plans.run(name, o.listener()), { workers: true });
      o.endProgress();
      reportBackup(o, r);
      o.result({ plan: name, ...r }, r.snapshotId);
    });
}

const UNIT: Record<string, string> = {
  hourly: 'hours',
  daily: 'days',
  weekly: 'weeks',
  monthly: 'months',
  yearly: 'years',
};

/** The plan's keep policy with the --keep-* options given applied (0 drops a rule); none: no retention. */
function retentionOption(current: KeepPolicyDraft, opts: Partial<AddOpts>): { retention?: KeepPolicyDraft } {
  const given = keepOptionValues(opts);
  const next: KeepPolicyDraft = {};
  for (const r of KEEP_RULE_NAMES) {
    const n = given[r] ?? current[r];
    if (n) next[r] = n;
  }
  return keepPolicyIsEmpty(next) ? {} : { retention: next };
}

/** "the last 3, 7 daily · applied 10:02, removed 2" or "-". */
function retentionText(p: PlanInfo): string {
  if (!p.keeps) return '-';
  const policy =
    describeKeep(p.keeps.policy).replace(/^Keeps /, '') + (p.keeps.from === 'default' ? ' (default)' : '');
  const l = p.retentionLast;
  if (!l) return policy;
  return l.error
    ? `${policy} (failed ${when(l.at)}: ${l.error})`
    : `${policy} (applied ${when(l.at)}, removed ${l.removed})`;
}

function scheduleFromOptions(o: AddOpts): Schedule {
  const every = o.every as Schedule['every'];
  if (every !== 'weekly' && o.day !== undefined)
    throw new SettingsError(`--day is only for weekly plans (this one is ${every}).`);
  if ((every === 'manual' || every === 'hourly') && o.at !== undefined)
    throw new SettingsError(`--at is only for daily and weekly plans (this one is ${every}).`);
  if ((every === 'daily' || every === 'weekly') && o.at === undefined)
    throw new SettingsError(`--at is required for a ${every} plan: the time of day, such as 02:30.`);
  if (every === 'weekly' && o.day === undefined)
    throw new SettingsError('--day is required for a weekly plan: mon, tue, wed, thu, fri, sat or sun.');
  if (every === 'daily') return { every, at: o.at! };
  if (every === 'weekly') return { every, at: o.at!, day: o.day as 'mon' };
  return { every };
}

/** Runs `fn`; an error about a plan field is told with the option the user typed for it. */
function namingOption<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof SettingsError && err.field) {
      const option = OPTION_OF[err.field] ?? OPTION_OF[err.field.split('.')[0]!];
      if (option) throw new SettingsError(`${option}: ${err.message}`, err.field);
    }
    throw err;
  }
}

function due(p: PlanInfo): string {
  return p.nextDueAt === null ? '; run it with "cairn plan run"' : `, next due ${when(p.nextDueAt)}`;
}

function lastRunText(p: PlanInfo): string {
  const l = p.last;
  if (!l) return 'never';
  if (p.running) return `running since ${when(l.startedAt)}`;
  if (l.ok) return `${when(l.startedAt)} ok (${l.snapshotId})`;
  return `${when(l.startedAt)} failed: ${l.error}`;
}

/** Local time, to the minute: what a person compares with the clock on the wall. */
function when(ms: number): string {
  const d = new Date(ms);
  const p2 = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p2(d.getMonth() + 1)}-${p2(d.getDate())} ${p2(d.getHours())}:${p2(d.getMinutes())}`;
}
