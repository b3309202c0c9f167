"""`harness check CAMPAIGN [overrides]`: the pre-flight `harness run` does before its first
timed run, on its own. For each revision, in a fresh worker started exactly as a run is
(export, fence, build, environment, inputs): import the entry point and every stage, call
setup(), run one item untimed and check the output protocol. One line per problem naming
the revision, the key and the cause; exit 0 or 2; never writes a bundle."""
from __future__ import annotations

from harness.plan import spec
from harness.commands import error
from harness.commands.run import add_overrides, load_campaign


def add_parser(sub) -> None:
    p = sub.add_parser("check", help="pre-flight a campaign: both revisions set up and run one item, untimed")
    p.add_argument("campaign", help="campaign YAML file")
    add_overrides(p)
    p.set_defaults(func=main)


def main(args) -> int:
    from harness.engine.progress import Progress
    from harness.engine.runner import Interrupted, PreflightError, Runner

    try:
        with Progress() as progress:
            campaign = load_campaign(args)
            runner = Runner(campaign, None, progress=progress, check_only=True)
            runner.run()
    except PreflightError as exc:
        return error("check", *exc.problems)
    except (spec.SpecError, Interrupted) as exc:
        return error("check", exc)
    from harness.render.text import term

    for warning in runner.warnings + [runner.unanchored] * bool(runner.unanchored):
        print(f"warning: {term(warning)}")
    print(f"OK {campaign.source}: base and candidate import the entry point and every stage, set up, give the same "
          f"{len(runner.items_all)} items, and return a mapping of arrays for an item")
    return 0
