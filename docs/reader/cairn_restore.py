"""Restoring a snapshot into a new or empty folder: contents, modes, times, links and hard links."""

import math
import os


class RestoreError(Exception):
    pass


def _times(node):
    ns = math.floor(node["mtimeMs"]) * 1_000_000  # FORMAT.md: restored to the millisecond (truncated)
    return (ns, ns)


def restore_snapshot(repo, snap, dest, walk):
    """(files, bytes) written. Every file is created afresh (O_EXCL, O_NOFOLLOW) under folders this made."""
    if os.path.lexists(dest):
        if os.path.islink(dest) or not os.path.isdir(dest) or os.listdir(dest):
            raise RestoreError(f"{os.fsdecode(dest)}: give a new or empty folder")
    else:
        os.makedirs(dest)
    folders, linked = [], {}
    files = size = 0
    for rel, node in walk(repo, snap["tree"]):
        path = os.path.join(dest, rel)
        kind = node["type"]
        if kind == "dir":
            os.mkdir(path, 0o700)
            folders.append((path, node))
        elif kind == "symlink":
            os.symlink(node["target"], path)
            if os.utime in os.supports_follow_symlinks:
                os.utime(path, ns=_times(node), follow_symlinks=False)
        elif kind == "file":
            same = (node.get("device"), node.get("inode"))
            first = linked.get(same)
            if node.get("links", 1) > 1 and first and first[1] == node["content"]:
                os.link(first[0], path)
                continue
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            written = 0
            with os.fdopen(fd, "wb") as fh:
                for hexid in node["content"]:
                    written += fh.write(repo.blob(bytes.fromhex(hexid)))
            if written != node["size"]:
                raise RestoreError(f"{os.fsdecode(rel)}: {written} bytes restored, the tree says {node['size']}")
            os.chmod(path, node["mode"] & 0o7777)
            os.utime(path, ns=_times(node))
            if node.get("links", 1) > 1:
                linked[same] = (path, node["content"])
            files += 1
            size += written
    for path, node in reversed(folders):  # children first: writing into a folder changes its time
        os.chmod(path, node["mode"] & 0o7777)
        os.utime(path, ns=_times(node))
    return files, size
