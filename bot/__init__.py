"""Dialectic's surfaces: Slack, the REST API, the web console, the scheduler, the CLI, workers."""
