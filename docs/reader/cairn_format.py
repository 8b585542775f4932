"""Cairn repository format 2, the bytes: written from docs/FORMAT.md alone, no Cairn code.

Keys, sealed objects, key slots, index files, pool objects, shards and trees. Pure functions over
bytes; cairn_reader.py reads them from folders or buckets.
"""

import base64
import hashlib
import json
import struct
import unicodedata
import zlib

import blake3
import zstandard
import nacl.bindings as sodium
import nacl.exceptions
import nacl.pwhash
import argon2.low_level

MAGIC = {
    "data": b"CRND", "tree": b"CRNT", "pack": b"CRNP", "index": b"CRNI", "snapshot": b"CRNS",
    "config": b"CRNG", "lock": b"CRNL", "pool": b"CRNO", "revoked": b"CRNR",
}
SUBKEYS = {"blobId": 1, "blobSeal": 2, "metaSeal": 3, "secrets": 4, "shardMac": 5}
HEADER = 30
TAG = 16


class FormatError(Exception):
    """An object that is not what its name says; `problem` is one of FORMAT.md's names."""

    def __init__(self, problem, what):
        super().__init__(f"{what}: {problem}")
        self.problem = problem


def kdf(length, subkey_id, context, key):
    """crypto_kdf_derive_from_key as FORMAT.md defines it: BLAKE2b with salt and personalisation."""
    salt = struct.pack("<Q", subkey_id) + bytes(8)
    person = context.encode("ascii") + bytes(16 - len(context))
    return hashlib.blake2b(b"", digest_size=length, key=key, salt=salt, person=person).digest()


def subkeys(master):
    return {name: kdf(32, n, "cairn-v2", master) for name, n in SUBKEYS.items()}


JSON_MAX = 256 << 20


def expand_zstd(frame, limit, what):
    """One zstd frame naming its content size, at most `limit` bytes, and nothing after it."""
    try:
        size = zstandard.frame_content_size(frame)
    except zstandard.ZstdError:
        raise FormatError("bad-length", what) from None
    if size < 0 or size > limit:
        raise FormatError("bad-length", what)
    decoder = zstandard.ZstdDecompressor().decompressobj()
    try:
        out = decoder.decompress(frame)
    except zstandard.ZstdError:
        raise FormatError("bad-content", what) from None
    if len(out) != size or not decoder.eof or decoder.unused_data:
        raise FormatError("bad-length", what)
    return out


def open_sealed(body, kind, binding, key, what, limit=JSON_MAX):
    """The payload of a sealed object (expanded when its flags say so), checked in FORMAT.md's order.

    `limit` bounds what a compressed payload may expand to (a blob's recorded plain length)."""
    if len(body) < HEADER + TAG:
        raise FormatError("truncated", what)
    if body[0:4] != MAGIC[kind]:
        raise FormatError("bad-magic", what)
    if body[4] != 2 or body[5] & 0xFC:
        raise FormatError("unsupported-version", what)
    try:
        plain = sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
            bytes(body[HEADER:]), bytes(body[0:6]) + binding, bytes(body[6:HEADER]), key)
    except nacl.exceptions.CryptoError:
        raise FormatError("auth-failed", what) from None
    code = body[5] & 3
    if kind in ("pack", "index"):
        return plain, code  # the layout (index files), never a compression
    if code == 1:
        inflater = zlib.decompressobj(-15)
        try:
            out = inflater.decompress(plain, limit + 1)
        except zlib.error:
            raise FormatError("bad-content", what) from None
        if len(out) > limit or not inflater.eof or inflater.unused_data:
            raise FormatError("bad-length", what)
        return out, code
    if code == 2:
        return expand_zstd(plain, limit, what), code
    if code != 0:
        raise FormatError("unsupported-compression", what)
    return plain, code


def open_json(body, kind, binding, key, what):
    plain, _ = open_sealed(body, kind, binding, key, what)
    try:
        return json.loads(plain.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise FormatError("bad-content", what) from None


def open_blob(body, blob_id, plain_length, keys, what):
    """A data or tree blob: opened, inflated, its length and keyed BLAKE3 id checked."""
    kind = "tree" if body[0:4] == MAGIC["tree"] else "data"
    plain, _ = open_sealed(body, kind, blob_id, keys["blobSeal"], what, limit=plain_length)
    if len(plain) != plain_length:
        raise FormatError("bad-length", what)
    if blake3.blake3(plain, key=keys["blobId"]).digest() != blob_id:
        raise FormatError("bad-content", what)
    return plain


# Key slots ----------------------------------------------------------------------------------------

def slot_usable(slot):
    """Why a slot is passed over (FORMAT.md "What a slot may cost"), or None."""
    if not isinstance(slot, dict) or slot.get("version") != 2:
        return "not a version 2 key slot"
    if slot.get("kind") == "recovery":
        return None if slot.get("kdf", {}).get("alg") == "recovery-kdf" else "unknown KDF"
    k = slot.get("kdf", {})
    if slot.get("kind") != "passphrase" or k.get("alg") not in ("argon2id", "argon2id13"):
        return "unknown kind or KDF"
    ops, mem = k.get("opslimit", 0), k.get("memlimit", 0)
    if not (1 <= ops <= 32 and 8192 <= mem <= 1 << 30 and ops * mem <= 4 << 30):
        return "Argon2id cost outside the bounds"
    if k["alg"] == "argon2id":
        lanes = k.get("lanes", 0)
        if not (isinstance(lanes, int) and 1 <= lanes <= 16 and mem % 1024 == 0 and mem >= 8192 * lanes):
            return "Argon2id lanes outside the bounds"
    return None


def slot_cost(slot):
    k = slot.get("kdf", {})
    return k.get("opslimit", 0) * k.get("memlimit", 0)


def open_slot(slot, passphrase=None, recovery_key=None):
    """The master key, or None when the secret does not open this slot."""
    if slot["kind"] == "passphrase":
        if passphrase is None:
            return None
        k = slot["kdf"]
        pw, salt = unicodedata.normalize("NFC", passphrase).encode("utf-8"), base64.b64decode(k["salt"])
        if k["alg"] == "argon2id":
            kek = argon2.low_level.hash_secret_raw(
                pw, salt, time_cost=k["opslimit"], memory_cost=k["memlimit"] // 1024,
                parallelism=k["lanes"], hash_len=32, type=argon2.low_level.Type.ID, version=19)
        else:
            kek = nacl.pwhash.argon2id.kdf(32, pw, salt, opslimit=k["opslimit"], memlimit=k["memlimit"])
    else:
        if recovery_key is None:
            return None
        kek = kdf(32, 1, "cairn-rk", recovery_key)
    aad = b"\0".join(s.encode("utf-8") for s in ("cairn key slot v2", slot["id"], slot["repository"], slot["kind"]))
    try:
        return sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
            base64.b64decode(slot["sealed"]), aad, base64.b64decode(slot["nonce"]), kek)
    except nacl.exceptions.CryptoError:
        return None


def decode_recovery_key(text):
    """The 32 bytes of a recovery key as people see it (base32 groups and a 4-character checksum)."""
    clean = "".join(c for c in text.upper() if c not in " -\t\n").translate(str.maketrans("018", "OIB"))
    if len(clean) != 56:
        raise ValueError("a recovery key has 56 letters and digits (14 groups of 4)")
    key = base64.b32decode(clean[:52] + "====")
    check = base64.b32encode(hashlib.blake2b(key, digest_size=16).digest())[:4].decode()
    if check != clean[52:]:
        raise ValueError("the recovery key's last group does not match: a typo?")
    return key


# Index files --------------------------------------------------------------------------------------

def parse_index(payload, layout, what):
    """(superseded ids, packs): each pack {id, size, blobs, copies | ec} (pool target ids)."""
    pos = 0

    def take(n):
        nonlocal pos
        if pos + n > len(payload):
            raise FormatError("bad-content", what)
        pos += n
        return payload[pos - n:pos]

    def u(fmt):
        return struct.unpack(fmt, take(struct.calcsize(fmt)))[0]

    superseded = [take(32) for _ in range(u("<I"))]
    packs = []
    for _ in range(u("<I")):
        pack = {"id": take(32), "size": u("<Q")}
        if layout == 1:
            scheme = u("<B")
            if scheme == 0:
                pack["copies"] = [u("<H") for _ in range(u("<B"))]
            elif scheme == 1:
                k, m = u("<B"), u("<B")
                pack["ec"] = {"k": k, "m": m, "shards": [u("<H") for _ in range(k + m)]}
            else:
                raise FormatError("bad-content", what)
        pack["blobs"] = [
            {"kind": "tree" if take(1)[0] == 1 else "data", "id": take(32), "offset": u("<I"),
             "stored": u("<I"), "plain": u("<I")}
            for _ in range(u("<I"))
        ]
        packs.append(pack)
    if pos != len(payload):
        raise FormatError("bad-content", what)
    return superseded, packs


# Erasure-coded shards -----------------------------------------------------------------------------

def ceil_div(a, b):
    return -(-a // b)


def shard_length(n, k):
    """L = max(64, ⌈⌈n / k⌉ / 64⌉ × 64): a k-th of the pack, rounded up to 64 bytes."""
    return max(64, ceil_div(ceil_div(n, k), 64) * 64)


def open_shard(body, pack_id, index, keys, what):
    """(k, m, n, shard bytes) of a whole shard object, checked in FORMAT.md's order."""
    if len(body) < 84:
        raise FormatError("truncated", what)
    if body[0:4] != b"CRNE":
        raise FormatError("bad-magic", what)
    if body[4] != 2:
        raise FormatError("unsupported-version", what)
    length = struct.unpack("<I", body[48:52])[0]
    if len(body) != 84 + length:
        raise FormatError("truncated" if len(body) < 84 + length else "bad-length", what)
    mac = blake3.blake3(bytes(body[:52 + length]), key=keys["shardMac"]).digest()
    if not sodium.sodium_memcmp(mac, bytes(body[52 + length:])):
        raise FormatError("auth-failed", what)
    i, k, m = body[37], body[38], body[39]
    n = struct.unpack("<Q", body[40:48])[0]
    if k < 1 or m < 1 or k + m > 255 or i >= k + m or n < 1 or length != shard_length(n, k):
        raise FormatError("bad-content", what)
    if body[5:37] != pack_id or i != index:
        raise FormatError("misplaced", what)
    return k, m, n, bytes(body[52:52 + length])


# Trees --------------------------------------------------------------------------------------------

def tree_nodes(plain, what):
    """A tree's nodes, each with `raw` (its name as bytes, nameRaw over name), refused when malformed."""
    try:
        nodes = json.loads(plain.decode("utf-8"))["nodes"]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        raise FormatError("bad-content", what) from None
    seen = set()
    for node in nodes:
        raw = base64.b64decode(node["nameRaw"]) if "nameRaw" in node else node["name"].encode("utf-8")
        if raw in (b"", b".", b"..") or b"/" in raw or b"\0" in raw or raw in seen:
            raise FormatError("bad-content", f"{what}: a name that cannot be a file name")
        seen.add(raw)
        node["raw"] = raw
        if node["type"] == "symlink":
            node["target"] = (base64.b64decode(node["linkTargetRaw"]) if "linkTargetRaw" in node
                              else node["linkTarget"].encode("utf-8"))
    return nodes
