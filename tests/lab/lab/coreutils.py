"""What the lab's container commands print, as coreutils and GNU tar would: file bytes in chunks, sizes,
``ls -l`` lines, ``dd``'s summary and ``tar cf -`` streams. Generators, so a 1 GiB file never sits in memory."""

import os
import posixpath
import stat
import tarfile
import time

CHUNK = 256 * 1024
TAR_RECORD = 10240


def stream_file(path, start=0, length=None):
    """Yield the bytes of ``path`` from ``start``, ``length`` bytes at most, in chunks."""
    with open(path, "rb") as f:
        f.seek(start)
        remaining = length
        while remaining is None or remaining > 0:
            chunk = f.read(CHUNK if remaining is None else min(CHUNK, remaining))
            if not chunk:
                return
            if remaining is not None:
                remaining -= len(chunk)
            yield chunk


def parse_size(text):
    """coreutils sizes: 512, 4K, 1M, 1G, 1KB (=1000)... Raises ValueError."""
    units = {
        "": 1,
        "c": 1,
        "w": 2,
        "b": 512,
        "K": 1024,
        "k": 1024,
        "KiB": 1024,
        "KB": 1000,
        "kB": 1000,
        "M": 1024**2,
        "MiB": 1024**2,
        "MB": 1000**2,
        "G": 1024**3,
        "GiB": 1024**3,
        "GB": 1000**3,
    }
    digits = len(text) - len(text.lstrip("0123456789"))
    if digits == 0 or text[digits:] not in units:
        raise ValueError(text)
    return int(text[:digits]) * units[text[digits:]]


def long_line(real, name):
    st = os.lstat(real)
    owner = "root" if st.st_uid == 0 else str(st.st_uid)
    group = "root" if st.st_gid == 0 else str(st.st_gid)
    when = time.strftime("%b %e %H:%M", time.localtime(st.st_mtime))
    return "%s %d %s %s %d %s %s\n" % (stat.filemode(st.st_mode), st.st_nlink, owner, group, st.st_size, when, name)


def dd_summary(copied, bs):
    full, partial = divmod(copied, bs)
    records = "%d+%d" % (full, 1 if partial else 0)
    if copied < 1000:
        amount = "%d bytes" % copied
    else:
        amount = "%d bytes (%.1f MB, %.1f MiB)" % (copied, copied / 1e6, copied / 1048576.0)
    # The lab claims every copy took 1 ms.
    rate = copied / 1e3
    return "%s records in\n%s records out\n%s copied, 0.001 s, %.1f MB/s\n" % (records, records, amount, rate)


def _tar_entries(name, real):
    """(archive name, real path) for a member and, for a directory, everything below it."""
    yield name, real
    if os.path.isdir(real) and not os.path.islink(real):
        for entry in sorted(os.listdir(real)):
            yield from _tar_entries(posixpath.join(name, entry), os.path.join(real, entry))


def tar_stream(members):
    written = 0
    for top_name, top_real in members:
        for name, real in _tar_entries(top_name.rstrip("/") or top_name, top_real):
            st = os.lstat(real)
            info = tarfile.TarInfo(name.lstrip("/"))
            info.mode = stat.S_IMODE(st.st_mode)
            info.mtime = int(st.st_mtime)
            info.uid, info.gid = st.st_uid, st.st_gid
            if stat.S_ISDIR(st.st_mode):
                info.type = tarfile.DIRTYPE
            elif stat.S_ISLNK(st.st_mode):
                info.type = tarfile.SYMTYPE
                info.linkname = os.readlink(real)
            else:
                info.size = st.st_size
            header = info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")
            yield header
            written += len(header)
            if info.type == tarfile.REGTYPE:
                sent = 0
                for chunk in stream_file(real, 0, info.size):
                    sent += len(chunk)
                    yield chunk
                # A file that shrank while archived is padded, as GNU tar does.
                padding = (info.size - sent) + (-info.size % 512)
                if padding:
                    yield bytes(padding)
                written += info.size + (-info.size % 512)
    end = 1024 + (-(written + 1024) % TAR_RECORD)
    yield bytes(end)
