"""The `dialectic` command: the process entry point."""

from bot.cli.main import main

__all__ = ["main"]
