"""Slack Block Kit, one module per message family; pure functions over values that escape
every piece of model or user text and fit Slack's limits. Listeners call these; they never
build blocks themselves.

    common.py    Message, Slack's limits, block builders, the bot's words, fit()
    debate.py    started, status, phase reply, divergence summary (and the result pieces)
    review.py    review request and its buttons, decided request, the escalate modal
    modals.py    the /debate modal
    budget.py    today's budget
    home.py      the App Home tab
    digest.py    scheduled digests and their thread details, the schedules listing
    brief.py     pre-meeting decision briefs
    discussion.py  what presets promise: "needs human discussion", the brief's sections
    notices.py   help, usage errors, acks, refusals and thread notes
"""
