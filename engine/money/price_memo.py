"""The price library's answers of today, kept in a file, so that a short process pricing models it
priced before does not import the library (genai-prices: ~0.04 s of a `dialectic run`'s start,
whose estimate prices every planned call before admission).

An answer is a pure function of the library's data, the day (a price may start on a date; a
time-of-day price is sampled over the day: engine/money/prices.py) and the (model, provider)
asked, so the file is read only when it was written by the same installed library (its data
module's size and modification time) on the same UTC day; anything else (no file, another day,
another library, an unreadable file) is asked of the library, as without the file. Processes
writing at once may drop one another's new entries: that only makes a later one ask again.
`keep_in` is called by the process that wants it (bot/service/terminal.py); without it nothing
is read or written.
"""

from __future__ import annotations

import importlib.util
import json
import os
from datetime import UTC, datetime
from pathlib import Path

#: a library answer as stored: (its provider id, input, cached input, output) or None (unpriced)
Entry = tuple[str, float, float | None, float] | None

_where: list[Path] = []
_memo: dict[str, Entry] = {}
_loaded: list[str | None] = []   # the stamp the file was read under, once read


def keep_in(path: Path | None) -> None:
    """Read and write the library's answers in `path` from now on (its folder must exist);
    None: nowhere."""
    _where[:] = [] if path is None else [path]
    _memo.clear()
    _loaded.clear()


def stamp() -> str | None:
    """The installed library's data (size, modification time) and today's UTC date; None
    without the library."""
    spec = importlib.util.find_spec("genai_prices")   # finds it without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        data = os.stat(Path(next(iter(spec.submodule_search_locations))) / "data.py")
    except OSError:
        return None
    return f"{data.st_size}:{data.st_mtime_ns}:{datetime.now(UTC).date().isoformat()}"


def recall(key: str) -> tuple[bool, Entry]:
    """(True, the kept answer for `key`), or (False, None) when none is kept."""
    if not _where:
        return False, None
    now = stamp()
    if _loaded != [now]:
        _memo.clear()
        _loaded[:] = [now]
        _memo.update(_read(_where[0], now))
    return key in _memo, _memo.get(key)


def remember(key: str, entry: Entry) -> None:
    """Keep `entry` for `key` (best effort: a file that cannot be written is left as it is)."""
    if not _where or (now := stamp()) is None:
        return
    path = _where[0]
    kept = _read(path, now)
    kept[key] = entry
    _memo.update(kept)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    try:   # 0600 whatever the umask, as every file of the data directory (storage/permissions.py)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(json.dumps({"stamp": now, "prices": kept}))
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)


def _read(path: Path, now: str | None) -> dict[str, Entry]:
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(kept, dict) or now is None or kept.get("stamp") != now:
        return {}
    prices = kept.get("prices")
    if not isinstance(prices, dict):
        return {}
    return {k: None if v is None else (v[0], v[1], v[2], v[3]) for k, v in prices.items()
            if v is None or (isinstance(v, list) and len(v) == 4)}
