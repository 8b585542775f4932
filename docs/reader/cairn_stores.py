"""Where a Cairn repository's objects are read from: a folder target or an S3 bucket (read only)."""

import os
import stat
from urllib.parse import urlparse


class FolderStore:
    """A folder target. Links are never followed: every object must be a regular file."""

    def __init__(self, root):
        self.root = os.path.abspath(root)
        if not os.path.isdir(self.root):
            raise OSError(f"{root}: no such folder")

    def __str__(self):
        return self.root

    def list(self, prefix):
        """(key, size) of every object under `prefix` ("keys/", "index/", "data/…")."""
        base = os.path.join(self.root, prefix)
        out = []
        if not os.path.isdir(base) or os.path.islink(base.rstrip("/")):
            return out
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
            for name in filenames:
                full = os.path.join(dirpath, name)
                st = os.lstat(full)
                if stat.S_ISREG(st.st_mode) and not name.startswith("."):
                    out.append((os.path.relpath(full, self.root).replace(os.sep, "/"), st.st_size))
        return out

    def exists(self, key):
        return os.path.isfile(os.path.join(self.root, key))

    def get(self, key, byte_range=None):
        fd = os.open(os.path.join(self.root, key), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            if byte_range is None:
                return fh.read()
            fh.seek(byte_range[0])
            body = fh.read(byte_range[1])
            if len(body) != byte_range[1]:
                raise OSError(f"{key}: shorter than the index says")
            return body


class S3Store:
    """A bucket at `https://endpoint/bucket` (path style); credentials from the AWS variables."""

    def __init__(self, url):
        import boto3  # only when a bucket is read

        u = urlparse(url)
        self.bucket = u.path.strip("/")
        self.label = url
        self.client = boto3.client("s3", endpoint_url=f"{u.scheme}://{u.netloc}",
                                   region_name=os.environ.get("AWS_REGION", "us-east-1"),
                                   config=boto3.session.Config(s3={"addressing_style": "path"}))

    def __str__(self):
        return self.label

    def list(self, prefix):
        out = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            out += [(o["Key"], o["Size"]) for o in page.get("Contents", [])]
        return out

    def exists(self, key):
        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
            return True
        except self.client.exceptions.ClientError:
            return False

    def get(self, key, byte_range=None):
        extra = {} if byte_range is None else {"Range": f"bytes={byte_range[0]}-{byte_range[0] + byte_range[1] - 1}"}
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=key, **extra)["Body"].read()
        except self.client.exceptions.NoSuchKey:
            raise OSError(f"{key}: not found") from None
        except self.client.exceptions.ClientError as e:
            raise OSError(f"{key}: {e}") from None
        if byte_range is not None and len(body) != byte_range[1]:
            raise OSError(f"{key}: shorter than the index says")
        return body


def open_store(kind, where):
    return FolderStore(where) if kind == "dir" else S3Store(where)
