"""`python -m bot` is the `dialectic` command."""

from bot.cli.main import main

raise SystemExit(main())
