"""`python -m bot` is the `dialectic` command."""

from bot.cli import main

raise SystemExit(main())
