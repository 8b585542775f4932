// Types for @ronomon/reed-solomon 6.0.0 (it ships none): the calls Cairn uses (erasure.ts).
declare module '@ronomon/reed-solomon' {
  export interface Context {
    readonly k: number;
    readonly m: number;
  }
  export const MAX_K: number;
  export const MAX_M: number;
  export function create(k: number, m: number): Context;
  /**
   * Computes the shards in `targets` (bit i: shard i) from those in `sources`. Data shards are
   * `buffer[bufferOffset … + bufferSize)` cut in k, parity shards `parity[parityOffset … + paritySize)`
   * cut in m; every shard has the same length, a multiple of 8.
   */
  export function encode(
    context: Context,
    sources: number,
    targets: number,
    buffer: Buffer,
    bufferOffset: number,
    bufferSize: number,
    parity: Buffer,
    parityOffset: number,
    paritySize: number,
    callback: (err: Error | undefined) => void,
  ): void;
}
