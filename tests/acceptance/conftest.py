"""Fixtures for tests that do real I/O: the fake OpenAI server on loopback, the databases
(SQLite, and the throwaway PostgreSQL when DIALECTIC_TEST_PG_URL is set)."""

from tests.fakes.fixtures import fake_openai, gateway_settings  # noqa: F401
from tests.support.storage_fixtures import db, pg_db, sqlite_db  # noqa: F401
