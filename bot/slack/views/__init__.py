"""Slack Block Kit, one module per message family; pure functions over values that escape
every piece of model or user text and fit Slack's limits."""
