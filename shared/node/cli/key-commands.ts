import type { Command } from 'commander';
import type { Output } from './output.ts';
import { table } from './output.ts';
import { readNewPassphrase } from './passphrase.ts';
import { withEngine } from './session.ts';

export function registerKeyCommands(program: Command, out: () => Output): void {
  const key = program.command('key').description('manage the key slots that open the repository');

  key
    .command('ls')
    .description('list key slots (passphrases and recovery keys)')
    .action(async () => {
      const o = out();
      const rows = await withEngine(async (e) => e.keys.list());
      o.result(
        rows.map((s) => ({
          id: s.id,
          kind: s.kind,
          createdAt: s.createdAt,
          host: s.host,
          current: s.current,
        })),
        table([
          ['ID', 'KIND', 'CREATED', 'HOST', ''],
          ...rows.map((s) => [s.id, s.kind, s.createdAt, s.host, s.current ? '(this session)' : '']),
        ]),
      );
    });

  key
    .command('add')
    .description('add a passphrase slot (CAIRN_NEW_PASSPHRASE or asked)')
    .action(async () => {
      const o = out();
      const passphrase = await readNewPassphrase();
      const slot = await withEngine((e) => e.keys.add({ passphrase }));
      o.result({ id: slot.id }, `Added key slot ${slot.id}.`);
    });

  key
    .command('rm')
    .description('remove a key slot from every target and the keystore')
    .argument('<slot-id>')
    .action(async (id: string) => {
      const o = out();
      await withEngine((e) => e.keys.remove(id));
      o.result({ removed: id }, `Removed key slot ${id}.`);
    });

  key
    .command('passwd')
    .description('change the passphrase (CAIRN_NEW_PASSPHRASE or asked); no data is rewritten')
    .action(async () => {
      const o = out();
      const passphrase = await readNewPassphrase();
      const slot = await withEngine((e) => e.keys.changePassphrase(passphrase));
      o.result({ id: slot.id }, `Changed the passphrase (key slot ${slot.id}).`);
    });

  key
    .command('recovery')
    .description('create a recovery key: 256 random bits that open the repository instead of a passphrase')
    .action(async () => {
      const o = out();
      const { slot, recoveryKey } = await withEngine((e) => e.keys.createRecoveryKey());
      o.result(
        { id: slot.id, recoveryKey },
        `Recovery key (shown once; store it apart from this computer):\n\n  ${recoveryKey}\n\nUse it with CAIRN_RECOVERY_KEY or "cairn connect --recovery-key".`,
      );
    });
}
