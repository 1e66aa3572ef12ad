"""What a provider's 400s taught about a model at an endpoint, kept: taken once under a lock per
(endpoint, model), applied to every later request, and stored through `engine.ports.LessonBook`
(the database) so the next process starts knowing it.

Parallel calls that hit the same 400 do not each learn it: each request remembers the lesson's
version it was built from, and a 400 answering an older version is only sent again, with what
was learned meanwhile (so a second identical 400 never reads as "nothing left to change").
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from engine.provider.profiles import CAPS, OUTPUT_MODES, CapParameter, ModelProfile, OutputMode

log = logging.getLogger(__name__)

Key = tuple[str, str]   # (endpoint, model)


class LessonBook(Protocol):
    """What providers' 400s taught, kept across processes (engine/provider/lessons.py): a lesson
    per (endpoint, model) as a small JSON object. The service keeps it in the database."""

    async def load(self, endpoint: str) -> dict[str, dict[str, Any]]:
        """model -> lesson, for every model `endpoint` taught something about."""
        ...

    async def save(self, endpoint: str, model: str, lesson: dict[str, Any]) -> None: ...

    async def forget(self, endpoint: str) -> int:
        """Delete `endpoint`'s lessons; how many there were."""
        ...


@dataclass(slots=True)
class Lesson:
    """What 400s taught about one model at one endpoint: parameters to leave out, the cap's
    name, the output mode to use instead, the context window the server named."""

    dropped: set[str] = field(default_factory=set)
    cap: CapParameter | None = None
    output_mode: OutputMode | None = None
    window: int | None = None
    version: int = 0

    def describe(self) -> list[str]:
        said = [f"{p} dropped" for p in sorted(self.dropped)]
        if self.cap is not None:
            said.append(f"output cap sent as {self.cap}")
        if self.output_mode is not None:
            said.append(f"{self.output_mode.replace('_', ' ')} output used")
        if self.window is not None:
            said.append(f"context window {self.window} tokens")
        return said

    def to_json(self) -> dict[str, Any]:
        return {"dropped": sorted(self.dropped), "cap": self.cap,
                "output_mode": self.output_mode, "window": self.window}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Lesson:
        cap = data.get("cap")
        mode = data.get("output_mode")
        window = data.get("window")
        return cls(dropped={str(p) for p in data.get("dropped") or ()},
                   cap=cap if cap in CAPS else None,
                   output_mode=mode if mode in OUTPUT_MODES else None,
                   window=int(window) if isinstance(window, int) and window > 0 else None)


class Learned:
    """Lessons per (endpoint, model): read from the book once, learned under a lock, written
    back at once."""

    def __init__(self, book: LessonBook | None = None) -> None:
        self._book = book
        self._lessons: dict[Key, Lesson] = {}
        self._locks: dict[Key, asyncio.Lock] = {}
        self._loaded: set[str] = set()
        self._loading = asyncio.Lock()

    async def load(self, endpoint: str) -> None:
        """The lessons the book keeps for `endpoint`, read once per process."""
        if self._book is None or endpoint in self._loaded:
            return
        async with self._loading:
            if endpoint in self._loaded:
                return
            for model, data in (await self._book.load(endpoint)).items():
                self._lessons.setdefault((endpoint, model), Lesson.from_json(data))
            self._loaded.add(endpoint)

    def version(self, *, endpoint: str, model: str) -> int:
        lesson = self._lessons.get((endpoint, model))
        return lesson.version if lesson is not None else 0

    def window(self, *, endpoint: str, model: str) -> int | None:
        lesson = self._lessons.get((endpoint, model))
        return lesson.window if lesson is not None else None

    def apply(self, profile: ModelProfile, *, endpoint: str, model: str) -> ModelProfile:
        lesson = self._lessons.get((endpoint, model))
        if lesson is None:
            return profile
        return replace(profile, dropped=profile.dropped | frozenset(lesson.dropped),
                       cap=lesson.cap or profile.cap,
                       output_mode=lesson.output_mode or profile.output_mode)

    async def learn(self, parameter: str, profile: ModelProfile, *, endpoint: str, model: str,
                    seen: int | None = None) -> bool:
        """Take in that `parameter` was refused for a request built from `profile` at lesson
        version `seen`; True when the request is worth sending again (learned now, or by a
        parallel call since), False when there is nothing left to change (the 400 stands)."""
        key = (endpoint, model)
        async with self._locks.setdefault(key, asyncio.Lock()):
            lesson = self._lessons.setdefault(key, Lesson())
            if seen is not None and seen != lesson.version:
                return True   # learned by a parallel call meanwhile: send again with it
            said = _take(lesson, parameter, profile)
            if said is None:
                return False
            await self._keep(key, lesson, f"{endpoint} {said} for {model}")
            return True

    async def learn_window(self, window: int, *, endpoint: str, model: str) -> bool:
        """Take in the context window a 400 named; False when it was known already."""
        key = (endpoint, model)
        async with self._locks.setdefault(key, asyncio.Lock()):
            lesson = self._lessons.setdefault(key, Lesson())
            if lesson.window == window:
                return False
            lesson.window = window
            await self._keep(key, lesson, f"{endpoint} has a context window of {window} tokens "
                                          f"for {model}")
            return True

    async def _keep(self, key: Key, lesson: Lesson, said: str) -> None:
        lesson.version += 1
        log.warning("%s (learned once%s)", said, ", kept" if self._book else "")
        if self._book is not None:
            await self._book.save(key[0], key[1], lesson.to_json())

    def lessons(self) -> dict[Key, Lesson]:
        """Every lesson so far, by (endpoint, model), for `dialectic doctor`."""
        return {key: lesson for key, lesson in self._lessons.items() if lesson.describe()}

    async def forget(self, endpoint: str) -> int:
        """Forget every lesson about `endpoint`, here and in the book; how many models had one."""
        gone = [key for key in self._lessons if key[0] == endpoint]
        for key in gone:
            del self._lessons[key]
        stored = await self._book.forget(endpoint) if self._book is not None else 0
        return max(len(gone), stored)


def _take(lesson: Lesson, parameter: str, profile: ModelProfile) -> str | None:
    """Change `lesson` for the refused `parameter`; what was learned, or None for nothing."""
    if parameter == "response_format":
        lower = _next_mode(profile.output_mode)
        if lower is None:
            return None
        lesson.output_mode = lower
        return f"refused {profile.output_mode} output; using {lower}"
    if parameter in CAPS:
        if profile.cap != parameter or not profile.sends(parameter):
            return None
        if lesson.cap is None:
            lesson.cap = CAPS[1] if parameter == CAPS[0] else CAPS[0]
            return f"refused {parameter}; sending {lesson.cap}"
        if parameter != lesson.cap:
            return None
        lesson.dropped.update(CAPS)   # the renamed cap refused too: the endpoint takes none
        return "refused both output-cap parameters; none sent"
    if parameter in lesson.dropped or parameter in profile.dropped:
        return None
    lesson.dropped.add(parameter)
    return f"refused {parameter}; leaving it out"


def _next_mode(mode: OutputMode) -> OutputMode | None:
    index = OUTPUT_MODES.index(mode)
    return OUTPUT_MODES[index + 1] if index + 1 < len(OUTPUT_MODES) else None
