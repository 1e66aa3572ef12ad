"""Unit tests: pure code, no I/O (no socket, database, subprocess or browser)."""
