"""Scheduled work: morning digests on cron slots and pre-meeting briefs, each run once.

    scheduler.py   Scheduler: APScheduler wiring (CalendarTrigger), catch-up, firing,
                   pause/resume, run now
    digests.py     one digest run: signals -> debates -> one published digest
    briefs.py      the brief command, planning and running briefs
    calendar.py    cron calendars (croniter, crontab(5) meaning), slots, catch-up plans (pure)
    config.py      a `[[schedules]]` entry as a typed value
    workspace.py   a workspace's own schedules (App Home, console, API): the form's rules,
                   who may change them, and their value for the scheduler
    signals.py     signal sources and their lines
    reports.py     what runs produce, as values the surfaces render
    publishing.py  the Publisher port a surface (Slack) implements
    settings.py    SchedulingSettings

Imports the service, storage and engine; surfaces import it.
"""
