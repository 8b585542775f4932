"""Checks cairn_format.py and cairn_erasure.py against docs/vectors: `python3 docs/reader/check_vectors.py`."""

import json
import os
import sys

import cairn_erasure
import cairn_format as f

HERE = os.path.dirname(os.path.abspath(__file__))
V = json.load(open(os.path.join(HERE, "..", "vectors", "format-v2.json")))
E = json.load(open(os.path.join(HERE, "..", "vectors", "erasure-parity.json")))
hx = bytes.fromhex


def main():
    master = hx(V["masterKey"])
    keys = f.subkeys(master)
    for name, want in V["subkeys"].items():
        assert keys[name].hex() == want, f"subkey {name}"
    b = V["blob"]
    blob_id = hx(b["id"])
    plain = hx(b["plaintext"]) if all(c in "0123456789abcdef" for c in b["plaintext"]) else b["plaintext"].encode()
    for sealed in ("sealed", "sealedCompressed", "sealedZstd"):
        assert f.open_blob(hx(b[sealed]), blob_id, len(plain), keys, sealed) == plain, sealed
    cfg = f.open_json(hx(V["config"]["object"]), "config", b"config", keys["metaSeal"], "config")
    assert cfg == V["config"]["value"], "config"
    s = V["snapshot"]
    assert f.open_json(hx(s["object"]), "snapshot", s["value"]["id"].encode(), keys["metaSeal"], "snapshot") == s["value"]
    lk = V["lock"]
    assert f.open_json(hx(lk["object"]), "lock", lk["id"].encode(), keys["metaSeal"], "lock") == lk["value"]
    r = V["revocation"]
    assert f.open_json(hx(r["object"]), "revoked", r["value"]["id"].encode(), keys["metaSeal"], "revoked") == r["value"]
    pool = f.open_json(hx(V["pool"]["object"]), "pool", V["pool"]["key"].encode(), keys["metaSeal"], "pool")
    assert pool["self"] == V["pool"]["self"], "pool"
    for name, layout in (("index", 0), ("poolIndex", 1), ("poolIndexEc", 1)):
        x = V[name]
        payload, code = f.open_sealed(hx(x["object"]), "index", hx(x["id"]), keys["metaSeal"], name)
        assert code == layout, name
        f.parse_index(payload, code, name)
    for name in ("shard", "parity"):
        x = V[name]
        obj = hx(x["object"])
        k, m, n, body = f.open_shard(obj, obj[5:37], x["index"], keys, name)
        assert (k, m) == (x["k"], x["m"]), name
    pack = hx(E["pack"])
    for code in E["codes"]:
        k, m, L = code["k"], code["m"], code["shardLength"]
        assert L == f.shard_length(len(pack), k), f"shard length {k}+{m}"
        cut = pack + bytes(k * L - len(pack))
        data = [cut[i * L:(i + 1) * L] for i in range(k)]
        parity = [hx(p) for p in code["parity"]]
        assert cairn_erasure.encode(data, k, m) == parity, f"parity {k}+{m}"
        lost = list(range(k - 1, k - 1 + m))  # the last data shard and the first m - 1 parity shards
        given = [None if i in lost else s for i, s in enumerate(data + parity)]
        assert cairn_erasure.rebuild(given, k, m) == data + parity, f"rebuild {k}+{m}"
    for tree in ("tree", "treeKinds", "treeRawNames"):
        t = V[tree]
        plain_tree = t["plaintext"].encode()
        f.tree_nodes(plain_tree, tree)
        if "id" in t:
            assert f.blake3.blake3(plain_tree, key=keys["blobId"]).hexdigest() == t["id"], tree
    for name in ("keySlot", "keySlotArgon2id13"):
        slot = V[name]["slot"]
        assert f.slot_usable(slot) is None, name
        assert f.open_slot(slot, passphrase=V[name]["passphrase"]).hex() == V["masterKey"], name
        assert f.open_slot(slot, passphrase="wrong") is None, name
    rk = V["recovery"]
    assert f.decode_recovery_key(rk["text"]).hex() == rk["bytes"], "recovery key text"
    assert f.open_slot(rk["slot"], recovery_key=hx(rk["bytes"])) is not None, "recovery slot"
    print("every vector checks out")


if __name__ == "__main__":
    sys.exit(main())
