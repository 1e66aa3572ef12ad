"""Where `dialectic eval --plot PATH` may write: checked before the evaluation runs, and written
without following a link or truncating what it should not.

The suffix names the format (.png, .svg, .pdf; anything else is refused up front). The target
must be a new file in an existing folder, or, with `--force`, an existing regular file: never a
directory, a symbolic link, a hard-linked file, a device, pipe or socket, nor anything on /proc,
/sys or /dev. The write opens the file itself with O_NOFOLLOW (and O_EXCL without --force), so
a link planted while the evaluation ran is refused too, never followed.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from engine.errors import InvalidRequest

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
_PSEUDO = ("/proc", "/sys", "/dev")
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_OPEN = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _refused(path: Path, why: str) -> InvalidRequest:
    return InvalidRequest(f"cannot write the plot to {path}: {why}")


def _oserror(path: Path, exc: OSError) -> InvalidRequest:
    if exc.errno == errno.ELOOP:
        return _refused(path, "it is a symbolic link; name the file itself")
    if exc.errno == errno.EEXIST:
        return _refused(path, "it exists; pass --force to replace it")
    return _refused(path, exc.strerror or str(exc))


def plot_format(path: Path) -> str:
    """The format the suffix names; InvalidRequest for any other suffix."""
    found = FORMATS.get(path.suffix.lower())
    if found is None:
        raise _refused(path, "name a .png, .svg or .pdf file (the suffix is the format)")
    return found


def _on_pseudo_filesystem(folder: Path) -> bool:
    device = folder.stat().st_dev
    return any(os.path.isdir(p) and os.stat(p).st_dev == device for p in _PSEUDO)


def _regular(path: Path, found: os.stat_result) -> None:
    """A file that may be replaced: regular, and with no other name (a hard link would carry
    the write to a file elsewhere)."""
    if not stat.S_ISREG(found.st_mode):
        raise _refused(path, "it is not a regular file (a device, pipe or socket)")
    if found.st_nlink > 1:
        raise _refused(path, "it has other names (hard links); remove it or name a new file")


def _existing(path: Path, found: os.stat_result, *, force: bool) -> None:
    mode = found.st_mode
    if stat.S_ISLNK(mode):
        raise _refused(path, "it is a symbolic link; name the file itself")
    if stat.S_ISDIR(mode):
        raise _refused(path, "it is a directory; name a file in it")
    _regular(path, found)
    if not force:
        raise _refused(path, "it exists; pass --force to replace it")
    if not os.access(path, os.W_OK):
        raise _refused(path, "permission denied")


def check_target(path: Path, *, force: bool) -> str:
    """Before anything runs: the format, and that the file can be written as asked
    (InvalidRequest saying why not). A new file is created and removed again to prove it."""
    fmt = plot_format(path)
    folder = path.parent
    if not folder.is_dir():
        raise _refused(path, f"there is no folder {folder}")
    if _on_pseudo_filesystem(folder):
        raise _refused(path, f"{folder} is not a folder for files")
    try:
        found: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        found = None
    except OSError as exc:
        raise _oserror(path, exc) from None
    if found is not None:
        _existing(path, found, force=force)
        return fmt
    try:
        os.close(os.open(path, _NEW, 0o666))
    except OSError as exc:
        raise _oserror(path, exc) from None
    path.unlink()
    return fmt


def write_target(path: Path, data: bytes, *, force: bool) -> None:
    """Write `data` to `path`: a new file, or (with `force`) over an existing regular file;
    never through a link, into a device or pipe, or over a file without `force`."""
    try:
        fd = os.open(path, _OPEN if force else _OPEN | os.O_EXCL, 0o666)
    except OSError as exc:
        raise _oserror(path, exc) from None
    try:
        _regular(path, os.fstat(fd))
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        raise _oserror(path, exc) from None
    finally:
        os.close(fd)


__all__ = ["FORMATS", "check_target", "plot_format", "write_target"]
