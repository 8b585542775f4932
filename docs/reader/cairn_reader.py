#!/usr/bin/env python3
"""A reference reader of Cairn repositories (format 2), written from docs/FORMAT.md alone.

Lists snapshots, verifies them and restores them from folder targets or S3 buckets, without Cairn:

    pip install pynacl blake3 [boto3]
    export CAIRN_PASSPHRASE=…            # or CAIRN_RECOVERY_KEY=…, or be asked
    python3 cairn_reader.py --dir /mnt/backup ls
    python3 cairn_reader.py --dir /mnt/a --dir /mnt/b verify <snapshot id>
    python3 cairn_reader.py --s3 https://s3.example.com/my-bucket restore <snapshot id> ~/restored

Every member of a pool that is at hand is given (--dir, --s3, repeatable); members may be missing
while the pool's policy allows it. S3 credentials come from the usual AWS variables.
Erasure-coded packs are rebuilt from any k of their k + m shards (cairn_erasure.py).
"""

import argparse
import getpass
import json
import os
import sys

import cairn_format as f
from cairn_erasure import rebuild
from cairn_restore import RestoreError, restore_snapshot
from cairn_stores import open_store


class ReadError(Exception):
    pass


class Repository:
    """Keys, config, pool, index and snapshots of a repository, read from every store given."""

    def __init__(self, stores, passphrase=None, recovery_key=None):
        self.stores = stores
        self.keys, self.slot_id, self.repo_id = self._unlock(passphrase, recovery_key)
        self._check_config()
        self.members = self._pool_members()
        self.blobs, self.packs = self._load_index()
        self.snapshots = self._load_snapshots()
        self._rebuilt = {}

    # --- keys and config
    def _unlock(self, passphrase, recovery_key):
        slots = {}
        for store in self.stores:
            for name, size in store.list("keys/"):
                sid = name[len("keys/"):]
                if sid in slots or size > 64 << 10:
                    continue
                try:
                    slot = json.loads(store.get(name))
                except (ValueError, OSError):
                    continue
                if f.slot_usable(slot) is None and slot.get("id") == sid:
                    slots[sid] = slot
        for slot in sorted(slots.values(), key=f.slot_cost):
            master = f.open_slot(slot, passphrase=passphrase, recovery_key=recovery_key)
            if master is None:
                continue
            keys = f.subkeys(master)
            if self._revoked(keys, slot["id"]):
                continue
            return keys, slot["id"], slot["repository"]
        raise ReadError("No key slot opens with this secret (wrong passphrase or recovery key?).")

    def _revoked(self, keys, slot_id):
        for store in self.stores:
            if store.exists(f"revoked/{slot_id}"):
                try:
                    f.open_json(store.get(f"revoked/{slot_id}"), "revoked", slot_id.encode(), keys["metaSeal"],
                                f"revoked/{slot_id}")
                    return True
                except f.FormatError:
                    pass  # a record that does not authenticate revokes nothing
        return False

    def _check_config(self):
        for store in self.stores:
            cfg = f.open_json(store.get("config"), "config", b"config", self.keys["metaSeal"], f"{store}: config")
            if cfg["id"] != self.repo_id:
                raise ReadError(f"{store} holds another repository ({cfg['id'][:12]}…).")

    def _pool_members(self):
        """Pool target id -> store, from each store's newest pool object that opens (`self`)."""
        members = {}
        for store in self.stores:
            for name, _ in sorted(store.list("pools/"), reverse=True):
                try:
                    pool = f.open_json(store.get(name), "pool", name.encode(), self.keys["metaSeal"], name)
                except f.FormatError:
                    continue
                members[pool["self"]] = store
                break
        return members

    # --- index and snapshots
    def _load_index(self):
        files = {}
        for store in self.stores:
            for name, _ in store.list("index/"):
                iid = name[len("index/"):]
                if iid in files and files[iid][2] != 0:
                    continue
                try:
                    payload, layout = f.open_sealed(store.get(name), "index", bytes.fromhex(iid),
                                                    self.keys["metaSeal"], f"{store}: {name}")
                except f.FormatError as e:
                    print(f"warning: {e}: passed over", file=sys.stderr)
                    continue
                superseded, packs = f.parse_index(payload, layout, name)
                # A flags-0 file places its packs on the store that holds it; the same file on two
                # stores (not in a pool) names both.
                prev = files.get(iid)
                homes = (prev[3] if prev else []) + ([store] if layout == 0 else [])
                files[iid] = (superseded, packs, layout, homes)
        dead = {s.hex() for sup, _, _, _ in files.values() for s in sup}
        blobs, packs = {}, {}
        for iid, (_, file_packs, layout, homes) in files.items():
            if iid in dead:
                continue
            for p in file_packs:
                pid = p["id"].hex()
                entry = packs.setdefault(pid, {"size": p["size"], "stores": [], "ec": None})
                if layout == 0:
                    entry["stores"] += [s for s in homes if s not in entry["stores"]]
                elif "copies" in p:
                    entry["stores"] += [self.members[t] for t in p["copies"]
                                        if t in self.members and self.members[t] not in entry["stores"]]
                else:
                    ec = entry["ec"] or {"k": p["ec"]["k"], "m": p["ec"]["m"], "shards": [None] * len(p["ec"]["shards"])}
                    for i, t in enumerate(p["ec"]["shards"]):
                        if t != 0xFFFF and t in self.members:
                            ec["shards"][i] = self.members[t]
                    entry["ec"] = ec
                for b in p["blobs"]:
                    blobs.setdefault(b["id"], []).append((pid, b))
        return blobs, packs

    def _load_snapshots(self):
        found = {}
        for store in self.stores:
            for name, _ in store.list("snapshots/"):
                sid = name[len("snapshots/"):]
                if sid in found:
                    continue
                try:
                    found[sid] = f.open_json(store.get(name), "snapshot", sid.encode(), self.keys["metaSeal"], name)
                except f.FormatError as e:
                    print(f"warning: {store}: {e}: passed over", file=sys.stderr)
        return sorted(found.values(), key=lambda s: s["time"])

    def snapshot(self, prefix):
        hits = [s for s in self.snapshots if s["id"].startswith(prefix)]
        if len(hits) != 1:
            raise ReadError(f'No one snapshot is named by "{prefix}" ("ls" lists them).')
        return hits[0]

    # --- blobs
    def blob(self, blob_id):
        """A blob's plaintext from the first place that gives it intact (every pack, every copy)."""
        places = self.blobs.get(blob_id)
        if not places:
            raise ReadError(f"blob {blob_id.hex()[:12]}… is in no index file")
        problems = []
        for pid, b in places:
            pack = self.packs[pid]
            what = f"blob {blob_id.hex()[:12]}… in pack {pid[:12]}…"
            if pack["ec"] is not None:
                try:
                    whole = self._ec_pack(pid, pack)
                    return f.open_blob(whole[b["offset"]:b["offset"] + b["stored"]], blob_id, b["plain"],
                                       self.keys, what)
                except (ReadError, f.FormatError) as e:
                    problems.append(str(e))
                continue
            for store in pack["stores"]:
                try:
                    body = store.get(f"data/{pid[:2]}/{pid}", (b["offset"], b["stored"]))
                    return f.open_blob(body, blob_id, b["plain"], self.keys, what)
                except (f.FormatError, OSError, KeyError) as e:
                    problems.append(f"{store}: {e}")
        raise ReadError(f"blob {blob_id.hex()[:12]}…: no copy gives it ({'; '.join(problems) or 'no copy at hand'})")

    def _ec_pack(self, pid, pack):
        """A whole erasure-coded pack from any k shards whose MACs hold."""
        if pid in self._rebuilt:
            return self._rebuilt[pid]
        ec = pack["ec"]
        k, m, n = ec["k"], ec["m"], pack["size"]
        shards = {}
        for i, store in enumerate(ec["shards"]):
            if store is None or len(shards) == k:
                continue
            name = f"data/{pid[:2]}/{pid}.{i:02x}"
            try:
                got = f.open_shard(store.get(name), bytes.fromhex(pid), i, self.keys, f"{store}: {name}")
            except (f.FormatError, OSError, KeyError):
                continue
            if got[:3] == (k, m, n):
                shards[i] = got[3]
        if len(shards) < k:
            raise ReadError(f"pack {pid[:12]}…: {len(shards)} of the {k} shards it needs are at hand")
        if any(i not in shards for i in range(k)):
            given = [shards.get(i) for i in range(k + m)]
            for i, s in enumerate(rebuild(given, k, m, parity=False)):
                shards[i] = s
        whole = b"".join(shards[i] for i in range(k))[:n]
        self._rebuilt = {pid: whole}
        return whole

    def tree(self, tree_hex):
        return f.tree_nodes(self.blob(bytes.fromhex(tree_hex)), f"tree {tree_hex[:12]}…")


def walk(repo, tree_hex, path=b""):
    """Every node of a tree, depth first, with its path (bytes)."""
    for node in repo.tree(tree_hex):
        p = path + b"/" + node["raw"] if path else node["raw"]
        yield p, node
        if node["type"] == "dir":
            yield from walk(repo, node["subtree"], p)


def cmd_ls(repo, _args):
    print(f"{'ID':<14}{'TIME':<26}{'HOST':<16}{'FILES':>8}  SOURCES")
    for s in repo.snapshots:
        files = sum(s.get("summary", {}).get("files", {}).values())
        print(f"{s['id']:<14}{s['time']:<26}{s['host'][:15]:<16}{files:>8}  {', '.join(s['sources'])}")
    return 0


def cmd_verify(repo, args):
    snaps = [repo.snapshot(args.snapshot)] if args.snapshot else repo.snapshots
    seen, problems, files = set(), 0, 0
    for s in snaps:
        try:
            for path, node in walk(repo, s["tree"]):
                if node["type"] != "file":
                    continue
                files += 1
                for hexid in node["content"]:
                    if hexid in seen:
                        continue
                    seen.add(hexid)
                    try:
                        repo.blob(bytes.fromhex(hexid))
                    except (ReadError, f.FormatError) as e:
                        problems += 1
                        print(f"{s['id']}: {path.decode('utf-8', 'replace')}: {e}")
        except (ReadError, f.FormatError) as e:
            problems += 1
            print(f"{s['id']}: {e}")
    print(f"{len(snaps)} snapshot(s), {files} file(s), {len(seen)} blob(s) read: "
          + ("no problem." if problems == 0 else f"{problems} problem(s)."))
    return 1 if problems else 0


def cmd_restore(repo, args):
    s = repo.snapshot(args.snapshot)
    files, size = restore_snapshot(repo, s, os.fsencode(args.dest), walk)
    print(f"Restored {files} file(s) ({size} bytes) of snapshot {s['id']} to {args.dest}.")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description="Read a Cairn repository (format 2) without Cairn.")
    ap.add_argument("--dir", action="append", default=[], help="a folder target (repeat for pool members)")
    ap.add_argument("--s3", action="append", default=[], help="https://endpoint/bucket (path style)")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("ls", help="list snapshots")
    v = sub.add_parser("verify", help="read and authenticate every blob (of one snapshot, or all)")
    v.add_argument("snapshot", nargs="?")
    r = sub.add_parser("restore", help="restore a snapshot into a new or empty folder")
    r.add_argument("snapshot")
    r.add_argument("dest")
    args = ap.parse_args(argv)
    stores = [open_store("dir", d) for d in args.dir] + [open_store("s3", u) for u in args.s3]
    if not stores:
        ap.error("give at least one --dir or --s3")
    recovery = os.environ.get("CAIRN_RECOVERY_KEY")
    passphrase = os.environ.get("CAIRN_PASSPHRASE")
    if not recovery and passphrase is None:
        passphrase = getpass.getpass("Passphrase: ")
    try:
        repo = Repository(stores, passphrase=passphrase,
                          recovery_key=f.decode_recovery_key(recovery) if recovery else None)
        return {"ls": cmd_ls, "verify": cmd_verify, "restore": cmd_restore}[args.command](repo, args)
    except (ReadError, RestoreError, f.FormatError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
