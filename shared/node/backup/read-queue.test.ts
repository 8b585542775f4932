import { describe, expect, it } from 'vitest';
import { ReadQueue } from './read-queue.ts';
import type { FileToRead } from './walk.ts';

const file = (i: number) => ({ slot: i }) as unknown as FileToRead;

describe('ReadQueue: files handed over by a walk as it goes', () => {
  it('makes the walk wait while `max` are queued, and lets it go on once half are taken', async () => {
    const q = new ReadQueue(4);
    let woken = 0;
    q.onMore(() => woken++);
    for (let i = 0; i < 3; i++) expect(q.push(file(i))).toBeUndefined();
    expect(woken).toBe(1); // the first file of an empty queue wakes the pool
    let walkOn = false;
    void q.push(file(3))!.then(() => (walkOn = true));
    q.next();
    await Promise.resolve();
    expect(walkOn).toBe(false); // 3 queued: more than half
    q.next();
    await Promise.resolve();
    expect(walkOn).toBe(true);
    expect(q.more()).toBe(true);
    q.end();
    expect(q.more()).toBe(false);
    expect([q.next(), q.next(), q.next()]).toEqual([file(2), file(3), undefined]);
  });

  it('once closed (the backup stopped), lets a waiting walk go and takes nothing more', async () => {
    const q = new ReadQueue(2);
    q.push(file(0));
    const waiting = q.push(file(1));
    expect(waiting).toBeInstanceOf(Promise);
    q.close();
    await waiting;
    expect(q.push(file(2))).toBeUndefined();
    expect(q.left()).toEqual([file(0), file(1)]);
    expect(q.more()).toBe(false);
  });
});
