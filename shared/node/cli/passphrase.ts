import readline from 'node:readline';
import { takeSecretEnv } from '../secret-env.ts';

/** CAIRN_PASSPHRASE, else a hidden prompt on the terminal (twice when creating a keystore). */
export async function readPassphrase(opts: { confirm: boolean }): Promise<string> {
  const fromEnv = takeSecretEnv('CAIRN_PASSPHRASE');
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  if (!process.stdin.isTTY) {
    throw new Error('No passphrase: set CAIRN_PASSPHRASE or run cairn in a terminal to be asked for it.');
  }
  const first = await ask('Passphrase: ');
  if (opts.confirm && (await ask('Repeat passphrase: ')) !== first)
    throw new Error('The passphrases do not match.');
  return first;
}

/** A hidden prompt on the terminal. */
export function askHidden(prompt: string): Promise<string> {
  if (!process.stdin.isTTY)
    throw new Error(`No terminal to ask "${prompt.trim()}"; set it in the environment instead.`);
  return ask(prompt);
}

/** CAIRN_NEW_PASSPHRASE, else asked twice on the terminal. */
export async function readNewPassphrase(): Promise<string> {
  const fromEnv = takeSecretEnv('CAIRN_NEW_PASSPHRASE');
  if (fromEnv) return fromEnv;
  const first = await askHidden('New passphrase: ');
  if ((await ask('Repeat new passphrase: ')) !== first) throw new Error('The passphrases do not match.');
  return first;
}

function ask(prompt: string): Promise<string> {
  return new Promise((resolve) => {
    const rl = readline.createInterface({ input: process.stdin, output: process.stderr, terminal: true });
    const out = rl as unknown as { _writeToOutput: (s: string) => void; output: NodeJS.WriteStream };
    out._writeToOutput = (s: string) => {
      if (s.includes(prompt)) process.stderr.write(prompt);
    };
    rl.question(prompt, (answer) => {
      rl.close();
      process.stderr.write('\n');
      resolve(answer);
    });
  });
}
