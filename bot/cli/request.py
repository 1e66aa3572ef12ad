"""The debate request a command line asks for (`run` and `estimate`), read from its arguments."""

from __future__ import annotations

import argparse

from engine.domain import DebateRequest


def request_of(args: argparse.Namespace) -> DebateRequest:
    fields: dict[str, object] = {"topic": args.topic, "requested_by": "cli",
                                 "context": args.context}
    for name in ("mode", "preset", "rounds", "judges"):
        if getattr(args, name) is not None:
            fields[name] = getattr(args, name)
    return DebateRequest.model_validate(fields)


__all__ = ["request_of"]
