"""Test doubles that are real servers on loopback (a fake OpenAI-compatible API)."""
