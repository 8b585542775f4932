// Reed-Solomon candidates for issue 10, measured on one core: encode (k data → m parity shards) and
// reconstruct (2 or 3 data shards missing) of a 16 MiB pack, each run verified byte for byte.
// The candidates are not Cairn dependencies: install them in a scratch folder first, then
//   UV_THREADPOOL_SIZE=1 node bench/ec-candidates.mjs /tmp/ec-try [runs]
// (one thread-pool thread, so the native addon's async work also runs on one core at a time).
import { createHash, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const dir = process.argv[2];
const runs = Number(process.argv[3] ?? 5);
if (!dir)
  throw new Error('usage: node bench/ec-candidates.mjs <folder with the candidates installed> [runs]');
const requireCandidate = createRequire(path.join(path.resolve(dir), 'package.json'));
// ESM-only packages have no require() entry: import their package folder's main file.
const importPkg = async (name, file) =>
  import(pathToFileURL(path.join(path.resolve(dir), 'node_modules', name, file)).href);

const PACK = 16 << 20;
const ALIGN = 64;
const shardLength = (k) => Math.max(ALIGN, Math.ceil(Math.ceil(PACK / k) / ALIGN) * ALIGN);

/** Each adapter encodes and reconstructs shards laid out back to back in one buffer of (k + m) × L. */
const candidates = {
  '@ronomon/reed-solomon': async () => {
    const rs = requireCandidate('@ronomon/reed-solomon');
    const contexts = new Map();
    const ctx = (k, m) => {
      if (!contexts.has(`${k}+${m}`)) contexts.set(`${k}+${m}`, rs.create(k, m));
      return contexts.get(`${k}+${m}`);
    };
    const run = (k, m, L, buf, sources, targets) =>
      new Promise((resolve, reject) =>
        rs.encode(ctx(k, m), sources, targets, buf, 0, k * L, buf, k * L, m * L, (err) =>
          err ? reject(err) : resolve(),
        ),
      );
    const bits = (list) => list.reduce((a, i) => a | (1 << i), 0);
    const all = (k, m) => [...Array(k + m).keys()];
    return {
      encode: (k, m, L, buf) => run(k, m, L, buf, bits(all(k, 0)), bits(all(k, m).slice(k))),
      reconstruct: (k, m, L, buf, missing) =>
        run(k, m, L, buf, bits(all(k, m).filter((i) => !missing.includes(i))), bits(missing)),
    };
  },
  '@digitaldefiance/reed-solomon-erasure.wasm': async () => {
    const { ReedSolomonErasure } = requireCandidate('@digitaldefiance/reed-solomon-erasure.wasm');
    return wasmClassAdapter(ReedSolomonErasure.fromCurrentDirectorySync());
  },
  '@subspace/reed-solomon-erasure.wasm': async () => {
    const { ReedSolomonErasure } = requireCandidate('@subspace/reed-solomon-erasure.wasm');
    return wasmClassAdapter(await ReedSolomonErasure.fromCurrentDirectory());
  },
  'wasm-reed-solomon-erasure': async () => {
    const rs = requireCandidate('wasm-reed-solomon-erasure');
    const split = (buf, n, L) => Array.from({ length: n }, (_, i) => buf.subarray(i * L, (i + 1) * L));
    return {
      encode: (k, m, L, buf) => {
        const out = rs.encode(split(buf, k, L), m);
        for (let i = k; i < k + m; i++) buf.set(out[i], i * L);
      },
      reconstruct: (k, m, L, buf, missing) => {
        const out = rs.reconstruct(split(buf, k + m, L), m, Uint32Array.from(missing));
        for (const i of missing) buf.set(out[i], i * L);
      },
    };
  },
  // GF(2^16) (reed-solomon-simd, Leopard-style FFT), for comparison: not the GF(2^8) code issue 10 asks for.
  '@typeberry/native': async () => {
    const { init, reedSolomon: rs } = await importPkg('@typeberry/native', 'index.js');
    await init.reedSolomon();
    return {
      encode: (k, m, L, buf) => {
        const out = rs.encode(m, new rs.ShardsCollection(L, buf.subarray(0, k * L))).take_data();
        buf.set(out, k * L);
      },
      reconstruct: (k, m, L, buf, missing) => {
        const have = [...Array(k + m).keys()].filter((i) => !missing.includes(i)).slice(0, k);
        const data = new Uint8Array(k * L);
        have.forEach((s, j) => data.set(buf.subarray(s * L, (s + 1) * L), j * L));
        const got = rs.decode(k, m, new rs.ShardsCollection(L, data, Uint16Array.from(have)));
        const idx = got.take_indices();
        const bytes = got.take_data();
        idx.forEach((s, j) => buf.set(bytes.subarray(j * L, (j + 1) * L), s * L));
      },
    };
  },
};

function wasmClassAdapter(rs) {
  const check = (code, what) => {
    if (code !== 0) throw new Error(`${what} returned ${code}`);
  };
  return {
    encode: (k, m, L, buf) => check(rs.encode(buf, k, m), 'encode'),
    reconstruct: (k, m, L, buf, missing) =>
      check(
        rs.reconstruct(
          buf,
          k,
          m,
          [...Array(k + m).keys()].map((i) => !missing.includes(i)),
        ),
        'reconstruct',
      ),
  };
}

async function time(fn) {
  const cpu = process.cpuUsage();
  const t = performance.now();
  await fn();
  const wall = (performance.now() - t) / 1000;
  const c = process.cpuUsage(cpu);
  return { wall, cpu: (c.user + c.system) / 1e6 };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const mbps = (seconds) => PACK / 1e6 / seconds;

const only = process.env.EC_ONLY?.split(',');
// One pack for every candidate, so that their parity can be compared: the same code gives the same bytes.
const pack = randomBytes(PACK);
const rows = [];
for (const [name, load] of Object.entries(candidates)) {
  if (only && !only.includes(name)) continue;
  let lib;
  try {
    lib = await load();
  } catch (err) {
    rows.push({ name, error: `does not load: ${err.message.split('\n')[0]}` });
    continue;
  }
  for (const [k, m, lost] of [
    [4, 2, 2],
    [6, 3, 2],
    [6, 3, 3],
  ]) {
    const L = shardLength(k);
    const buf = Buffer.alloc((k + m) * L);
    pack.copy(buf);
    const row = { name, code: `${k}+${m}`, lost, encode: [], decode: [] };
    try {
      for (let r = 0; r <= runs; r++) {
        buf.fill(0, k * L);
        const t = await time(() => lib.encode(k, m, L, buf));
        if (r > 0) row.encode.push(t); // the first run warms up
      }
      const whole = Buffer.from(buf);
      row.parity = createHash('sha256')
        .update(whole.subarray(k * L))
        .digest('hex')
        .slice(0, 12);
      const missing = [...Array(lost).keys()]; // data shards: the worst case for a reader
      for (let r = 0; r <= runs; r++) {
        for (const i of missing) buf.fill(0, i * L, (i + 1) * L);
        const t = await time(() => lib.reconstruct(k, m, L, buf, missing));
        if (!buf.subarray(0, k * L).equals(whole.subarray(0, k * L)))
          throw new Error('reconstructed data differs');
        if (r > 0) row.decode.push(t);
      }
    } catch (err) {
      row.error = err.message.split('\n')[0];
    }
    rows.push(row);
  }
}

const fmt = (ts) =>
  ts.length
    ? `${mbps(median(ts.map((t) => t.wall))).toFixed(0)} (${mbps(median(ts.map((t) => t.cpu))).toFixed(0)})`
    : '–';
console.log(`16 MiB pack, median of ${runs} runs after one warm-up; MB/s of pack by wall (by CPU time)`);
console.log('| library | code | lost | encode MB/s | reconstruct MB/s | parity (SHA-256) | note |');
console.log('| --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows)
  console.log(
    `| ${r.name} | ${r.code ?? ''} | ${r.lost ?? ''} | ${fmt(r.encode ?? [])} | ${fmt(r.decode ?? [])} | ${r.parity ?? ''} | ${r.error ?? ''} |`,
  );
