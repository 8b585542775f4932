"""Parity of erasure-coded packs, any k+m (docs/FORMAT.md, "Parity bytes"), written from the spec alone.

encode(data_shards, k, m) gives the m parity shards; rebuild(shards, k, m) gives back every missing shard
from any k present ones. Both work on bits: each element of the code's matrix over GF(2^w) stands for a
w x w matrix over GF(2), and each shard is cut into w packets per segment that are XORed whole.
"""

# (k, m) -> (w, p, x, y, ones): the table in FORMAT.md, one line per k, six cells (m = 1 ... 6).
_TABLE = """
2 7 - - 2|2 7 - - 4|2 7 0 1 6|4 19 0 1 16|4 19 0 1 20|4 19 0 1 24
2 7 - - 4|2 7 - - 9|4 19 0 4 28|4 19 0 5 40|4 19 2 9 51|4 19 4 10 62
2 7 - - 6|4 19 - - 26|4 19 0 9 44|4 19 1 8 63|4 19 1 9 82|4 19 0 9 101
4 19 - - 16|4 19 - - 36|4 19 0 9 63|4 19 3 11 89|4 19 3 11 116|4 19 11 4 145
4 19 - - 20|4 19 - - 47|4 19 4 13 82|4 19 3 12 118|4 19 0 9 152|4 19 0 9 185
4 19 - - 24|4 19 - - 58|4 19 2 12 102|4 19 2 12 144|4 19 0 9 186|4 19 0 9 231
4 19 - - 28|4 19 - - 71|4 19 1 13 123|4 19 2 12 174|4 19 0 9 226|4 19 7 0 277
4 19 - - 32|4 19 - - 84|4 19 2 13 142|4 19 2 12 205|4 19 0 9 265|4 19 0 8 328
4 19 - - 36|4 19 - - 97|4 19 1 13 162|4 19 2 12 237|4 19 0 9 308|4 19 1 10 376
4 19 - - 40|4 19 - - 111|4 19 1 13 186|4 19 0 12 268|4 19 0 11 347|4 19 0 10 426
4 19 - - 44|4 19 - - 125|4 19 0 13 211|4 19 0 12 300|4 19 0 11 390|8 135 58 188 1401
4 19 - - 48|4 19 - - 139|4 19 3 0 234|4 19 0 12 334|8 113 24 208 1269|8 135 57 188 1577
4 19 - - 52|4 19 - - 155|4 19 0 13 261|8 135 59 189 1037|8 113 27 236 1393|8 113 27 236 1733
4 19 - - 56|4 19 - - 171|8 169 4 252 777|8 135 58 189 1121|8 135 58 189 1508|8 135 58 188 1880
4 19 - - 60|8 135 - - 353|8 113 24 209 836|8 135 58 189 1225|8 101 28 232 1644|8 113 120 241 2037
8 29 - - 128|8 135 - - 380|8 113 22 213 901|8 113 22 212 1324|8 101 28 232 1765|8 101 28 232 2195
8 29 - - 136|8 135 - - 407|8 113 22 213 960|8 135 58 189 1423|8 101 27 232 1880|8 101 27 232 2343
8 29 - - 144|8 135 - - 434|8 113 24 213 1027|8 113 22 212 1513|8 195 8 32 2019|8 113 205 126 2500
8 29 - - 152|8 135 - - 462|8 113 22 213 1086|8 113 23 212 1604|8 195 7 32 2131|8 195 3 60 2654
8 29 - - 160|8 135 - - 490|8 113 22 213 1147|8 113 22 212 1695|8 195 4 238 2270|8 113 21 233 2816
8 29 - - 168|8 135 - - 518|8 113 21 213 1225|8 113 21 212 1801|8 195 3 60 2395|8 195 3 60 2980
8 29 - - 176|8 135 - - 546|8 113 20 213 1292|8 113 21 212 1906|8 195 35 28 2512|8 195 3 60 3135
8 29 - - 184|8 135 - - 574|8 113 19 213 1366|8 113 19 212 2008|8 195 3 238 2652|8 113 205 126 3291
8 29 - - 192|8 135 - - 603|8 113 18 213 1437|8 195 125 91 2110|8 195 3 238 2787|8 195 42 225 3466
"""


def _parse():
    table = {}
    for k, line in enumerate(_TABLE.strip().splitlines(), start=1):
        for m, cell in enumerate(line.split("|"), start=1):
            w, p, x, y, ones = cell.split()
            table[(k, m)] = (int(w), int(p), None if x == "-" else int(x), None if y == "-" else int(y), int(ones))
    return table


TABLE = _parse()


class Field:
    """GF(2^w): elements 0 ... 2^w - 1, addition XOR, powers of 2 reduced by p."""

    def __init__(self, w, p):
        self.w, self.size = w, (1 << w) - 1
        self.exp, self.log = [0] * self.size, [0] * (self.size + 1)
        b = 1
        for i in range(self.size):
            self.exp[i], self.log[b] = b, i
            b <<= 1
            if b & (1 << w):
                b = (b ^ p) & self.size

    def mul(self, a, b):
        return 0 if a == 0 or b == 0 else self.exp[(self.log[a] + self.log[b]) % self.size]

    def div(self, a, b):
        return 0 if a == 0 else self.exp[(self.log[a] - self.log[b]) % self.size]

    def ones(self, e):
        """How many ones e's w x w bit matrix has: the XORs multiplying by e costs."""
        total = 0
        for _ in range(self.w):
            total += bin(e).count("1")
            e = self.mul(e, 2)
        return total


def coding_matrix(k, m):
    """The m x k matrix over GF(2^w) that gives the parity, and its field."""
    if (k, m) not in TABLE:
        raise ValueError(f"erasure coding {k}+{m} is not defined (k 1-24, m 1-6)")
    w, p, x, y, ones = TABLE[(k, m)]
    f = Field(w, p)
    rows = [[1] * k]
    if m == 2:
        order = sorted(range(1, 1 << w), key=lambda e: (f.ones(e), e))
        rows.append(order[:k])
    elif m >= 3:
        cauchy = [[f.div(1, (y + r) ^ (x + c)) for c in range(k)] for r in range(m)]
        for r in range(1, m):
            row = [f.div(cauchy[r][c], cauchy[0][c]) for c in range(k)]
            best, by = sum(f.ones(e) for e in row), None
            for e in row:
                cost = sum(f.ones(f.div(d, e)) for d in row)
                if cost < best:
                    best, by = cost, e
            rows.append([f.div(d, by) for d in row] if by is not None else row)
    if sum(f.ones(e) for row in rows for e in row) != ones:
        raise AssertionError(f"the {k}+{m} matrix does not have the table's {ones} ones")
    return rows, f


def _bit_rows(k, m):
    """Row r*w+i of the parity bit matrix as a k*w-bit integer: bit c*w+j set when bit i of C[r][c]*2^j is."""
    rows, f = coding_matrix(k, m)
    w, out = f.w, []
    for r in range(m):
        for i in range(w):
            bits = 0
            for c in range(k):
                e = rows[r][c]
                for j in range(w):
                    if (e >> i) & 1:
                        bits |= 1 << (c * w + j)
                    e = f.mul(e, 2)
            out.append(bits)
    return out, w


def packet_size(length, k, w):
    p = length // w
    while p > 64 and p % 2 == 0 and (1 + k * w) * p > 1048576:
        p //= 2
    return p


def _apply(rows, inputs, length, k, w):
    """For each row (a k*w-bit integer over the inputs' packets) one output shard: XORs of packets."""
    P = packet_size(length, k, w)
    outs = [bytearray(length) for _ in range(len(rows) // w)]
    for seg in range(0, length, w * P):
        packets = [int.from_bytes(s[seg + j * P:seg + (j + 1) * P], "little") for s in inputs for j in range(w)]
        for n, bits in enumerate(rows):
            acc, col = 0, 0
            while bits:
                if bits & 1:
                    acc ^= packets[col]
                bits >>= 1
                col += 1
            start = seg + (n % w) * P
            outs[n // w][start:start + P] = acc.to_bytes(P, "little")
    return [bytes(o) for o in outs]


def encode(data_shards, k, m):
    """The m parity shards of k data shards of equal length (a multiple of 64)."""
    rows, w = _bit_rows(k, m)
    return _apply(rows, data_shards, len(data_shards[0]), k, w)


def _invert(rows, n):
    """The inverse of an n x n matrix over GF(2), rows as n-bit integers."""
    a, inv = list(rows), [1 << i for i in range(n)]
    for c in range(n):
        pivot = next((r for r in range(c, n) if (a[r] >> c) & 1), None)
        if pivot is None:
            raise ValueError("the shards given do not determine the data")
        a[c], a[pivot], inv[c], inv[pivot] = a[pivot], a[c], inv[pivot], inv[c]
        for r in range(n):
            if r != c and (a[r] >> c) & 1:
                a[r] ^= a[c]
                inv[r] ^= inv[c]
    return inv


def rebuild(shards, k, m, parity=True):
    """Every shard (k data, then m parity unless not asked) from a list with None for each missing one."""
    present = [i for i, s in enumerate(shards) if s is not None][:k]
    if len(present) < k:
        raise ValueError(f"only {len(present)} of the {k} shards needed are present")
    parity_rows, w = _bit_rows(k, m)
    # The rows giving each present shard's bits from the data's bits, then inverted: data from those shards.
    rows = []
    for i in present:
        rows += [1 << (i * w + j) for j in range(w)] if i < k else parity_rows[(i - k) * w:(i - k + 1) * w]
    data_rows = _invert(rows, k * w)
    missing_data = [i for i in range(k) if shards[i] is None]
    got = _apply([data_rows[i * w + j] for i in missing_data for j in range(w)],
                 [shards[i] for i in present], len(shards[present[0]]), k, w)
    data = list(shards[:k])
    for i, s in zip(missing_data, got):
        data[i] = s
    return data + encode(data, k, m) if parity else data
