"""`python -m bot` is the `dialectic` command."""

from bot.main import command

raise SystemExit(command())
