"""Integration tests: real SQLite and PostgreSQL, the fakes on loopback, the
real servers in process."""
