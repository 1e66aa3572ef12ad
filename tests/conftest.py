"""Shared fixtures: the fake OpenAI server, databases (SQLite and the throwaway PostgreSQL)."""

from tests.fakes.fixtures import fake_openai, gateway_settings  # noqa: F401
from tests.storage_fixtures import db, pg_db, sqlite_db  # noqa: F401
