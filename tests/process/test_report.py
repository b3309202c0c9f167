"""REPORT.md from verified bundles (harness/judge/survey.py judges, harness/render/report.py only
formats): the summary table, one way to check them all, a short section per bundle with its
picture drawn from the records, per-run detail folded away; a bundle that does not verify shows
nothing of itself and never stops the others; bundle text is inert; `--check` fails on drift."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import harness
from fakes import Model, comparison, run_fake
from harness import contract as C
from harness.cli import main as cli
from harness.judge.survey import find_bundles, survey
from harness.render import report
from harness.render.text import stage_summary, stage_table
from harness.selftest import tamper


@pytest.fixture(scope="module")
def repo(demo_bundle_master, tmp_path_factory) -> Path:
    """A repository holding the demo bundle and a fake one (another campaign) under evidence/."""
    root = tmp_path_factory.mktemp("repo")
    shutil.copytree(demo_bundle_master, root / "evidence" / "demo")
    outcome, _ = run_fake(tmp_path_factory.mktemp("fake"), Model(ratio=0.8, noise=0.02), out=root / "evidence" / "model")
    assert outcome.out == root / "evidence" / "model"
    return root


def render(root: Path) -> str:
    return report.render(survey(find_bundles(root)), root, "every bundle under `evidence/`")


def test_the_report_summarises_then_shows_each_bundle(repo):
    text = render(repo)
    assert text.startswith(report.GENERATED)
    head = text[:text.index("## Checking any bundle below")]
    for name in ("demo", "model"):
        row = next(line for line in head.splitlines() if line.startswith(f"| `evidence/{name}`"))
        assert "| yes " in row and "improved" in row
    assert text.count("## Checking any bundle below") == 1 and "python -S harness/rehash.py B" in text
    demo = text[text.index("## demo\n"):text.index("## model\n")]
    assert "```\nverdict: improved (exit 0): " in demo and "x faster [" in demo
    for name in ("demo", "model"):  # the summary table: the one figure, a factor beside its interval
        row = next(line for line in head.splitlines() if line.startswith(f"| `evidence/{name}`"))
        assert re.search(r"\| [0-9.,]+x faster \[[0-9.,]+x, [0-9.,]+x\] +\|", row), row
    assert "9 of the 9 items the workload gives" in demo and "golden file: 9 of its 9 items checked" in demo
    assert "<details><summary>Runs, in execution order (14)</summary>" in demo
    assert "### Stage self CPU" in demo and "### Output parity" in demo and "Parity identical" in demo


def test_the_report_is_deterministic(repo):
    assert render(repo) == render(repo)


def test_stage_tables_most_base_cpu_first_and_the_short_one_capped():
    stage = {"calls_per_run": 1, "calls": "equal", "candidate_self_cpu_s": 1.0, "candidate_incl_cpu_s": 1.0,
             "base_installed": True, "candidate_installed": True}
    c = comparison(stages={f"s{i}": {**stage, "base_self_cpu_s": float(i), "base_incl_cpu_s": float(i)}
                           for i in range(8)})
    full, left = stage_table(c.stages)
    assert left == 0 and [line.split("|")[1].strip() for line in full.splitlines()[2:]] == \
        [f"s{i}" for i in range(7, -1, -1)]
    short = stage_summary(c)
    assert "3 smaller stage(s) left out" in short[0] and short[1].count("\n") == 6


def test_a_bundle_that_does_not_verify_shows_nothing_of_itself_and_the_others_still_render(repo, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(repo, root)
    tamper.flip_byte(C.run_path("A1"))(root / "evidence" / "demo", None)
    text = render(root)
    demo = text[text.index("## demo\n"):text.index("## model\n")]
    assert "**does not verify" in demo and "verdict:" not in demo and "![" not in demo
    assert "## model\n" in text and "```\nverdict: improved" in text[text.index("## model\n"):]
    row = next(line for line in text.splitlines() if line.startswith("| `evidence/demo`"))
    assert "**does not verify**" in row and "**NO**" in row


def test_bundle_text_is_inert_and_never_hides_the_next_bundles_warning(repo, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(repo, root)
    injected = "evil <!-- hides everything after | it `code` [link](http://x) &amp;\nsecond line"
    for rel in (C.CAMPAIGN_JSON, C.CAMPAIGN_YAML):
        path = root / "evidence" / "demo" / rel
        if rel.endswith(".json"):
            doc = json.loads(path.read_text())
            doc["description"] = injected
            path.write_text(json.dumps(doc, indent=2))
        else:
            path.write_text(path.read_text().replace('description: "moving means', f'description: {json.dumps(injected)}'
                                                                                   '\n# "moving means', 1))
    tamper.reseal(root / "evidence" / "demo")
    tamper.flip_byte(C.run_path("A1"))(root / "evidence" / "model", None)
    text = render(root)
    assert "<!--" not in text and "[link](http" not in text  # no comment, no link
    assert "evil &lt;!-- hides everything after \\| it \\`code\\` \\[link\\](http:&#8288;//x) &amp;amp;\\\nsecond line" \
        in text \
        or "**does not verify" in text[text.index("## demo\n"):text.index("## model\n")]
    assert "**does not verify" in text[text.index("## model\n"):]


def test_a_workload_file_named_like_a_bundle_does_not_stop_the_report(repo, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(repo, root)
    # a bundle's stored workload holding a bagit.txt: never taken for a bundle of its own
    assert find_bundles(root) == [root / "evidence" / "demo", root / "evidence" / "model"]
    (root / "evidence" / "demo" / "data" / "workload" / "bagit.txt").write_text("BagIt-Version: 1.0\n")
    assert find_bundles(root) == [root / "evidence" / "demo", root / "evidence" / "model"]
    text = render(root)  # the demo no longer verifies (an extra file), the report still renders both
    assert "## demo\n" in text and "## model\n" in text


def test_no_bundles(tmp_path):
    assert "No bundles." in report.render([], tmp_path, "every bundle under `evidence/`")
    assert find_bundles(tmp_path) == []


def test_cli_writes_figures_then_check_matches_and_catches_drift(repo, tmp_path, capsys):
    root = tmp_path / "repo"
    shutil.copytree(repo, root)
    assert cli(["report", "--root", str(root)]) == 0
    for name in ("demo", "model"):
        assert (root / "docs" / "figures" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    written = (root / "REPORT.md").read_text()
    assert "![demo: ratio per round, per item, wall per run, stages](docs/figures/demo.png)" in written
    assert cli(["report", "--root", str(root), "--check"]) == 0
    assert "matches its 2 bundle(s)" in capsys.readouterr().out
    (root / "REPORT.md").write_text((root / "REPORT.md").read_text() + "edited by hand\n")
    assert cli(["report", "--root", str(root), "--check"]) == 1
    assert "differs from what its 2 bundle(s) produce" in capsys.readouterr().err


def test_named_bundles_are_a_preview_that_says_what_it_was_made_from(repo, capsys):
    assert cli(["report", "--root", str(repo), str(repo / "evidence" / "model")]) == 0
    out = capsys.readouterr().out
    assert "Made from the bundles named on the command line: `model`" in out and "## demo\n" not in out
    assert not (repo / "REPORT.md").exists()


def test_a_report_of_a_bundle_that_does_not_verify_exits_1(repo, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(repo, root)
    tamper.flip_byte(C.COMPARISON)(root / "evidence" / "model", None)
    result = harness("report", "--root", root)
    assert result.returncode == 1 and "does not verify" in result.stderr
    assert "## demo\n" in (root / "REPORT.md").read_text()
