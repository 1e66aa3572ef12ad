"""The SQLite database is private to the account that runs the service: every topic, transcript
and review is in it.

A data directory the service creates is 0700 and a database file it creates is 0600, whatever
the umask; SQLite gives the -wal, -shm and -journal files it creates the database file's own
mode, so they are 0600 too. Files that already exist are left as they are (an operator may
share them on purpose), but `exposed` names those a group or other users can read, for
`dialectic doctor` and `serve` to warn about once.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from storage.settings import StorageSettings

PRIVATE_DIRECTORY = 0o700
PRIVATE_FILE = 0o600
SIDE_FILES = ("-wal", "-shm", "-journal")


def prepare(database: Path) -> None:
    """Create the database's folder (0700) and an empty database file (0600) when missing;
    an existing folder or file is not touched."""
    folder = database.parent
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIRECTORY)
        os.chmod(folder, PRIVATE_DIRECTORY)   # the umask may have taken bits from mkdir's mode
    try:
        fd = os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | os.O_CLOEXEC, PRIVATE_FILE)
    except FileExistsError:
        return
    os.close(fd)


def _readers(mode: int) -> str:
    who = [name for name, bit in (("its group", stat.S_IRGRP), ("other users", stat.S_IROTH))
           if mode & bit]
    return " and ".join(who)


def exposed(database: Path) -> list[str]:
    """One line per database file (and its -wal, -shm, -journal) that a group or other users
    can read, saying how to make it private."""
    lines = []
    for path in (database, *(Path(f"{database}{side}") for side in SIDE_FILES)):
        try:
            mode = path.stat().st_mode
        except OSError:
            continue
        readers = _readers(mode)
        if readers and stat.S_ISREG(mode):
            lines.append(f"{path} can be read by {readers} (mode {stat.S_IMODE(mode):04o}); it "
                         f"holds every debate and review: chmod 600 {path}")
    return lines


def exposed_database(storage: StorageSettings) -> list[str]:
    """`exposed` for the configured database (nothing for PostgreSQL)."""
    path = storage.sqlite_file()
    return exposed(path) if path is not None else []


__all__ = ["PRIVATE_DIRECTORY", "PRIVATE_FILE", "exposed", "exposed_database", "prepare"]
