"""`dialectic eval` against hostile input, through the CLI entry: dataset lines nested 200,000
deep or holding a lone surrogate or NUL are one `file:line` refusal, and `--plot` checks its
final target before anything runs (no directory, link, special file or existing file without
--force; the suffix is the format)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.cli_fixtures import Cli, Done, clean_env, cli

__all__ = ["clean_env", "cli"]  # fixtures

GOOD = '{"question": "What is 2+2?", "answer": 4}'
RUN = ("--builtin", "arithmetic", "--n", "2", "--modes", "single", "--yes")


def _refused(done: Done, says: str) -> None:
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert says in said and "Traceback" not in said, said
    assert len(done.stdout.strip().splitlines()) == 1, said
    assert "evaluation will cost" not in said


@pytest.mark.parametrize(("line", "says"), [
    ("[" * 200_000 + "]" * 200_000, "hostile.jsonl:2: nested more than 64 levels deep"),
    ('{"question": "q", "answer": 1, "x": ' + '{"a": ' * 200_000 + "1" + "}" * 200_001,
     "hostile.jsonl:2: nested more than 64 levels deep"),
    ('{"question": "why \\ud800?", "answer": 1}', "hostile.jsonl:2: 'question': it holds a "
     "character that is not text"),
    ('{"question": "q", "answer": "\\u0000"}', "hostile.jsonl:2: 'answer': it holds a NUL"),
    ('{"question": "q\x00", "answer": 1}', "hostile.jsonl:2: the line holds a NUL byte"),
])
def test_hostile_dataset_lines_are_one_line_naming_file_and_line(
        cli: Cli, tmp_path: Path, line: str, says: str) -> None:
    (tmp_path / "hostile.jsonl").write_text(f"{GOOD}\n{line}\n", encoding="utf-8")
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'd.db'}"}
    _refused(cli("eval", "hostile.jsonl", "--yes", env=env), says)
    assert "no evaluations stored" in cli("eval", "list", env=env).stdout


def _no_run(cli: Cli, tmp_path: Path, target: str, says: str, *more: str) -> None:
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'p.db'}"}
    _refused(cli("eval", *RUN, "--plot", target, *more, env=env), says)
    assert not (tmp_path / "p.db").exists()   # nothing run, stored or spent


def test_plot_refuses_a_directory_a_link_a_pipe_and_proc(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "out.png").mkdir()
    _no_run(cli, tmp_path, "out.png", "it is a directory")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "link.png").symlink_to(victim)
    for more in ((), ("--force",)):
        _no_run(cli, tmp_path, "link.png", "it is a symbolic link", *more)
    (tmp_path / "dangling.png").symlink_to(tmp_path / "nowhere.png")
    _no_run(cli, tmp_path, "dangling.png", "it is a symbolic link", "--force")
    assert victim.read_text() == "precious\n" and not (tmp_path / "nowhere.png").exists()
    os.link(victim, tmp_path / "hard.png")
    _no_run(cli, tmp_path, "hard.png", "it has other names (hard links)", "--force")
    assert victim.read_text() == "precious\n"
    os.mkfifo(tmp_path / "pipe.png")
    _no_run(cli, tmp_path, "pipe.png", "not a regular file", "--force")
    _no_run(cli, tmp_path, "/proc/self/plot.png", "/proc/self is not a folder for files")
    _no_run(cli, tmp_path, "/proc/self/status", "name a .png, .svg or .pdf file")


@pytest.mark.parametrize("name", ["plot.gif", "plot", "plot.png.txt"])
def test_plot_refuses_a_suffix_that_names_no_format(cli: Cli, tmp_path: Path,
                                                    name: str) -> None:
    _no_run(cli, tmp_path, name, "name a .png, .svg or .pdf file")
    assert not (tmp_path / name).exists()


def test_plot_replaces_a_file_only_with_force_and_writes_its_suffixs_format(
        cli: Cli, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    (tmp_path / "eval.png").write_text("an older plot\n")
    _no_run(cli, tmp_path, "eval.png", "it exists; pass --force to replace it")
    assert (tmp_path / "eval.png").read_text() == "an older plot\n"
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'p.db'}"}
    done = cli("eval", *RUN, "--plot", "eval.png", "--force", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "eval.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    for name, magic in (("eval.svg", b"<?xml"), ("eval.PDF", b"%PDF-")):
        done = cli("eval", *RUN, "--plot", name, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert (tmp_path / name).read_bytes().startswith(magic)
        assert magic != b"<?xml" or b"<svg" in (tmp_path / name).read_bytes()[:2000]
    run_id = json.loads(cli("eval", "list", "--json", env=env).stdout)[0]["id"]
    _refused(cli("eval", "show", run_id, "--plot", "eval.png", env=env), "it exists")
    done = cli("eval", "show", run_id, "--plot", "eval.png", "--force", env=env)
    assert done.returncode == 0 and "plot written to eval.png" in done.stderr, done
