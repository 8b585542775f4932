import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/fixtures.ts';
import { newWriteTurns, useWriteTurns, writeAtInTurns, WRITE_PIECE } from './write-turns.ts';

afterEach(() => useWriteTurns(undefined));

/** Another thread holds `fd`'s lock word for `ms` (forever with Infinity); resolves once it holds it. */
function holdTurn(turns: SharedArrayBuffer, fd: number, ms: number): Promise<Worker> {
  const code = `
    const { workerData, parentPort } = require('node:worker_threads');
    const words = new Int32Array(workerData.turns);
    const slot = workerData.fd % (words.length);
    Atomics.store(words, slot, 1);
    parentPort.postMessage('held');
    if (workerData.ms !== null) {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, workerData.ms);
      Atomics.store(words, slot, 0);
      Atomics.notify(words, slot, 1);
    }`;
  const w = new Worker(code, {
    eval: true,
    workerData: { turns, fd, ms: Number.isFinite(ms) ? ms : null },
  });
  return new Promise((resolve) => w.once('message', () => resolve(w)));
}

describe('positional writes take turns per file', () => {
  it('write every byte where asked, in pieces, across several pieces', () => {
    useWriteTurns(newWriteTurns());
    const file = path.join(tempDir(), 'f');
    const fd = fs.openSync(file, 'w+');
    try {
      const data = randomBytes(3 * WRITE_PIECE + 12345);
      writeAtInTurns(fd, data, 100, data.length, 5000);
      const back = fs.readFileSync(file);
      expect(back.length).toBe(5000 + data.length);
      expect(back.subarray(5100).equals(data.subarray(100))).toBe(true);
      expect(back.subarray(0, 5100).every((b) => b === 0)).toBe(true);
    } finally {
      fs.closeSync(fd);
    }
  });

  it('wait while another thread writes into the same file, and go on when it is done', async () => {
    const turns = newWriteTurns();
    useWriteTurns(turns);
    const fd = fs.openSync(path.join(tempDir(), 'f'), 'w+');
    const other = await holdTurn(turns, fd, 400);
    try {
      const t0 = Date.now();
      writeAtInTurns(fd, Buffer.from('after'), 0, 5, 0);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
      expect(Date.now() - t0).toBeLessThan(1000);
    } finally {
      await other.terminate();
      fs.closeSync(fd);
    }
  });

  it('write anyway when the turn is never given back (a worker that died holding it)', async () => {
    const turns = newWriteTurns();
    useWriteTurns(turns);
    const file = path.join(tempDir(), 'f');
    const fd = fs.openSync(file, 'w+');
    const other = await holdTurn(turns, fd, Infinity);
    try {
      const t0 = Date.now();
      writeAtInTurns(fd, Buffer.from('written'), 0, 7, 0);
      expect(Date.now() - t0).toBeLessThan(3000);
      expect(fs.readFileSync(file, 'utf8')).toBe('written');
    } finally {
      await other.terminate();
      fs.closeSync(fd);
    }
  });
});
