"""Dialectic's debate engine: protocols, the LLM gateway, consensus statistics, cost and events.

Imports neither Slack, SQL, aiohttp nor APScheduler; storage and bot implement its interfaces.
"""
