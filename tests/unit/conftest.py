"""Unit tests do no I/O: a test here that opens a socket, a database or a process fails and
says where it belongs instead (files under tmp_path are allowed)."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
from collections.abc import Callable
from typing import Any, NoReturn

import pytest


def _refuse(what: str) -> Callable[..., NoReturn]:
    def refused(*_args: Any, **_kwargs: Any) -> NoReturn:
        raise AssertionError(f"a unit test {what}: move the file to tests/integration "
                             "(or tests/acceptance for whole processes)")
    return refused


@pytest.fixture(autouse=True)
def no_io(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _refuse("connects a socket"))
    monkeypatch.setattr(socket.socket, "connect_ex", _refuse("connects a socket"))
    monkeypatch.setattr(socket.socket, "bind", _refuse("binds a socket"))
    monkeypatch.setattr(sqlite3, "connect", _refuse("opens a database"))
    monkeypatch.setattr(subprocess.Popen, "__init__", _refuse("starts a process"))
