"""`dialectic reviews list|decide` and `dialectic reviewers link`: the review desk from the
terminal, with the same rules as Slack's buttons and the console (configured reviewers and user
groups only, refusals audited, a reason to escalate, decided once), and the reviewer links an
operator hands out where there is no Slack sign-in: for configured reviewers only (a member of a
listed user group is asked of Slack, as the review buttons ask)."""

from __future__ import annotations

import argparse

from bot.cli.host import CliContext, require_database
from bot.cli.parser import EXIT_OK
from bot.service.grants import reviewer_link
from bot.service.reviews import Reviewers
from bot.service.sessions import issue_reviewer_grant
from engine.errors import InvalidRequest
from storage.records import DecisionAbout, Origin, ReviewStatus
from storage.tenancy import Workspace

DECISIONS = {"approve": ReviewStatus.APPROVED, "escalate": ReviewStatus.ESCALATED,
             "rerun": ReviewStatus.RERUN}


async def list_reviews(ctx: CliContext, args: argparse.Namespace) -> int:
    require_database(ctx.settings.storage)
    async with ctx.host.hosted(ctx.settings, workers=0) as hosted:
        pending = await hosted.rt.reviews.pending()
        if not pending:
            ctx.console.print("nothing waits for a reviewer")
        for review in pending:
            record = await hosted.rt.service.get(review.debate_id)
            waiting = review.created_at.strftime("%Y-%m-%d %H:%M")
            spot = "[spot check] " if review.spot_check else ""
            ctx.console.print(f"{review.id}  {spot}{record.request.topic[:70]}\n"
                              f"    {review.reason or 'routed for review'} · since {waiting} "
                              f"UTC · {hosted.rt.url(record.id)}", markup=False)
    return EXIT_OK


async def decide(ctx: CliContext, args: argparse.Namespace) -> int:
    require_database(ctx.settings.storage)
    ctx.host.setup_logging(ctx.settings, quiet=True)
    async with ctx.host.hosted(ctx.settings, workers=0) as hosted:
        desk = hosted.rt.reviews
        decision = await desk.decide(args.review_id, DECISIONS[args.decision],
                                     by=args.reviewer, note=args.reason, surface="cli",
                                     about=DecisionAbout(args.about) if args.about else None,
                                     winner=args.winner)
        ctx.console.print(f"review {decision.review.id} {decision.review.status.value} by "
                          f"{args.reviewer}; debate {decision.record.id} is "
                          f"{decision.record.status.value.replace('_', ' ')}", markup=False)
        if decision.review.status is ReviewStatus.RERUN:
            sub = await desk.rerun(decision, origin=Origin(surface="cli", user_id=args.reviewer))
            ctx.console.print(f"re-run {sub.record.id} queued (a running `dialectic serve` or "
                              "`dialectic worker` runs it)", markup=False)
    return EXIT_OK


async def link(ctx: CliContext, args: argparse.Namespace) -> int:
    service, seconds = ctx.settings.service, args.days * 86400
    team = (args.team or "").strip()
    listed = Reviewers(service.reviewers)
    if team and not ctx.settings.multi_workspace:
        raise InvalidRequest("this service serves one Slack workspace: leave out --team")
    if ctx.settings.multi_workspace and not team:
        raise InvalidRequest("this service is installed in many Slack workspaces: name the one "
                             "the link opens with --team T0123ABC")
    if not team and (args.user.strip() in listed.users or not listed.groups):
        grant = await issue_reviewer_grant(service, listed, args.user, seconds=seconds)
    else:   # a workspace's link, or perhaps a member of a listed user group: ask the runtime
        require_database(ctx.settings.storage)
        ctx.host.setup_logging(ctx.settings, quiet=True)
        workspace = Workspace(team, (args.enterprise or "").strip() or None) if team else None
        async with ctx.host.hosted(ctx.settings, workers=0) as hosted:
            grant = await issue_reviewer_grant(service, hosted.rt.reviews, args.user,
                                               seconds=seconds, workspace=workspace,
                                               workspaces=hosted.rt.workspaces)
    scope = f" of workspace {team}" if team else ""
    ctx.console.print(f"reviewer link for {args.user.strip()}{scope}, valid {args.days:g} "
                      "days:\n"
                      f"{reviewer_link(service, grant)}\n"
                      f"token (as the API's bearer, or pasted at /signin):\n{grant}",
                      markup=False, soft_wrap=True)
    return EXIT_OK
