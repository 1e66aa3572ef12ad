#!/usr/bin/env python3
"""Move engine/'s top-level modules into the packages of their concept (issue 36), and rewrite
every reference to the old places.

    python3 scripts/rehouse_engine.py            # from the repository root
    python3 scripts/rehouse_engine.py --check    # exit 1 if anything still names an old place

engine/core/     running a debate: debate, runner, step_outcome, planning, replay, presets, prompts
engine/reading/  the reading of a result: agreement, verdicts, headline, discussion, outcomes,
                 figures

What stays at engine/'s top is what every part shares: errors, vocabulary, settings, domain,
options, ports, tracing, characters.

Idempotent: a module already moved is left where it is, and only text that still names an old
place is rewritten, so running it again after merging branches that added code importing the old
paths rewrites only that code. Moves are `git mv` (history follows). A module found at both its
old and new place (a branch re-created it) is reported and left for a person.

Rewritten, in every text file under engine/ storage/ bot/ tests/ docs/ scripts/ and README.md,
pyproject.toml, Makefile, compose.yml, Dockerfile (this script and its test excepted):
  dotted names   engine.runner -> engine.core.runner (imports, strings, mock targets, contracts)
  from-imports   `from engine import prompts, verdicts` -> one line per new package
  paths          engine/runner.py -> engine/core/runner.py
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: old module (under engine/) -> new package (under engine/)
MOVES: dict[str, str] = {
    "debate": "core", "runner": "core", "step_outcome": "core", "planning": "core",
    "replay": "core", "presets": "core", "prompts": "core",
    "agreement": "reading", "verdicts": "reading", "headline": "reading",
    "discussion": "reading", "outcomes": "reading", "figures": "reading",
}

#: a new package's docstring, when the script creates it (the committed ones say more)
PACKAGE_DOCS: dict[str, str] = {
    "core": '"""Running a debate: from a request to its result."""\n',
    "reading": '"""The reading of a result: what the judges\' scores say, computed once."""\n',
}

EXCLUDED_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache",
                 ".pytest_cache", "screenshots", "bench"}
SUFFIXES = {".py", ".md", ".toml", ".txt", ".cfg", ".ini", ".yml", ".yaml", ".html", ".mako",
            ".sh", ".json", ".jsonl"}
TOP_FILES = ("README.md", "pyproject.toml", "Makefile", "compose.yml", "Dockerfile")
SCAN_DIRS = ("engine", "storage", "bot", "tests", "docs", "scripts")

#: this script and its test, which name the old places on purpose
KEPT_AS_WRITTEN = {Path(__file__).resolve(),
                   (ROOT / "tests" / "unit" / "test_rehouse_engine.py").resolve()}
NAMES = "|".join(sorted(MOVES, key=len, reverse=True))
#: `engine.runner`, not `settings.engine.presets` (an attribute) nor `engine.core.runner`
DOTTED = re.compile(rf"(?<![\w.])engine\.({NAMES})\b")
IMPORTS = re.compile(rf"^(?P<lead>[ \t]*(?:from|import)[ \t]+)engine\.(?P<name>{NAMES})\b",
                     re.M)
PATHS = re.compile(rf"\bengine/({NAMES})\.py\b")
ONE_NAME = re.compile(rf"\bfrom engine import ({NAMES})\b(?![ \t]*,)")
FROM_ENGINE = re.compile(r"^(?P<indent>[ \t]*)from engine import (?P<names>[^(\n#]+?)"
                         r"(?P<comment>[ \t]*#.*)?$", re.M)


def git(*args: str) -> None:
    subprocess.run(["git", *args], cwd=ROOT, check=True)


def move_modules() -> list[str]:
    """`git mv` each module still at its old place; the problems a person must settle."""
    problems = []
    for package in sorted(set(MOVES.values())):
        folder = ROOT / "engine" / package
        folder.mkdir(exist_ok=True)
        init = folder / "__init__.py"
        if not init.exists():
            init.write_text(PACKAGE_DOCS[package])
            git("add", str(init.relative_to(ROOT)))
    for module, package in MOVES.items():
        old = ROOT / "engine" / f"{module}.py"
        new = ROOT / "engine" / package / f"{module}.py"
        if old.exists() and new.exists():
            problems.append(f"engine/{module}.py and engine/{package}/{module}.py both exist: "
                            "merge the old one's changes into the new one and delete it")
        elif old.exists():
            git("mv", str(old.relative_to(ROOT)), str(new.relative_to(ROOT)))
            print(f"moved engine/{module}.py -> engine/{package}/{module}.py")
    return problems


def split_from_engine(match: re.Match[str]) -> str:
    """`from engine import a, b` with moved names: one import per package they now live in."""
    names = [n.strip() for n in match["names"].split(",") if n.strip()]
    if not any(n.split(" as ")[0].strip() in MOVES for n in names):
        return match[0]
    groups: dict[str, list[str]] = {}
    for name in names:
        module = name.split(" as ")[0].strip()
        target = f"engine.{MOVES[module]}" if module in MOVES else "engine"
        groups.setdefault(target, []).append(name)
    lines = [f"{match['indent']}from {target} import {', '.join(group)}"
             for target, group in groups.items()]
    lines[0] += match["comment"] or ""
    return "\n".join(lines)


def rewrite_text(text: str) -> str:
    """Prose, strings, comments, toml: every dotted name and path of a moved module, and a
    one-name `from engine import runner` written inside a string (a test's planted import)."""
    text = ONE_NAME.sub(lambda m: f"from engine.{MOVES[m[1]]} import {m[1]}", text)
    text = DOTTED.sub(lambda m: f"engine.{MOVES[m[1]]}.{m[1]}", text)
    return PATHS.sub(lambda m: f"engine/{MOVES[m[1]]}/{m[1]}.py", text)


def rewrite_python(text: str) -> str:
    """Python: imports, and inside strings and comments (docstrings, mock targets, dotted
    paths); never code such as `engine.presets` on a variable named `engine`."""
    text = FROM_ENGINE.sub(split_from_engine, text)
    text = IMPORTS.sub(lambda m: f"{m['lead']}engine.{MOVES[m['name']]}.{m['name']}", text)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return rewrite_text(text)   # not Python a tokenizer reads: treat it as text
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    spans = [(starts[t.start[0] - 1] + t.start[1], starts[t.end[0] - 1] + t.end[1])
             for t in tokens if t.type in (tokenize.STRING, tokenize.COMMENT)]
    for begin, end in reversed(spans):
        text = text[:begin] + rewrite_text(text[begin:end]) + text[end:]
    return text


def rewrite(path: Path, text: str) -> str:
    return rewrite_python(text) if path.suffix == ".py" else rewrite_text(text)


def files() -> list[Path]:
    found = [ROOT / name for name in TOP_FILES if (ROOT / name).exists()]
    for top in SCAN_DIRS:
        for path in (ROOT / top).rglob("*"):
            if (path.is_file() and path.suffix in SUFFIXES
                    and not EXCLUDED_DIRS & set(path.relative_to(ROOT).parts)
                    and path.resolve() not in KEPT_AS_WRITTEN):
                found.append(path)
    return found


def rewrite_references(*, write: bool) -> list[str]:
    changed = []
    for path in files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        new = rewrite(path, text)
        if new != text:
            changed.append(str(path.relative_to(ROOT)))
            if write:
                path.write_text(new)
    return changed


def sort_imports(paths: list[str]) -> None:
    """Put the rewritten imports in ruff's order (isort rules only), when ruff is installed."""
    ruff = ROOT / ".venv" / "bin" / "ruff"
    python = [p for p in paths if p.endswith(".py")]
    if ruff.exists() and python:
        subprocess.run([str(ruff), "check", "--fix", "--select", "I", "--quiet", *python],
                       cwd=ROOT, check=False)


def main(argv: list[str]) -> int:
    if "--check" in argv:
        stale = rewrite_references(write=False)
        left = [f"engine/{m}.py" for m in MOVES if (ROOT / "engine" / f"{m}.py").exists()]
        for name in left + stale:
            print(f"names an old place: {name}", file=sys.stderr)
        return 1 if left or stale else 0
    problems = move_modules()
    changed = rewrite_references(write=True)
    for name in changed:
        print(f"rewrote {name}")
    sort_imports(changed)
    for name in changed:   # a longer dotted name can push a line past ruff's 100 characters
        for number, line in enumerate((ROOT / name).read_text().splitlines(), 1):
            if name.endswith(".py") and len(line) > 100:
                print(f"warning: {name}:{number} is {len(line)} characters: rewrap it")
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
