"""`python -m bot` is the `dialectic` command."""

from bot.main import main

raise SystemExit(main())
