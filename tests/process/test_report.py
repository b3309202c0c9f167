"""harness report / figure on small synthetic bundles (only the files the report reads)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.render.figure import render
from harness.render.report import find_bundles, render_bundle, render_report
from harness.comparison.legacy import analyze_v2 as analyze

BASE_ITEMS = [0.010, 0.020, 0.030, 0.015, 0.025, 0.012]


def make_runs(factor=0.8, loads=(0.5, 0.7), order="ABBA"):
    runs, counters = [], {"A": 0, "B": 0}
    for idx, letter in enumerate(order):
        counters[letter] += 1
        label = f"{letter}{counters[letter]}"
        variant = "base" if letter == "A" else "candidate"
        f = 1.0 if variant == "base" else factor
        items = [{"id": f"item{k}", "wall_s": w * f * (1 + 0.01 * ((idx + k) % 3)),
                  "cpu_s": w * f, "fields": {}, "error": None}
                 for k, w in enumerate(BASE_ITEMS)]
        runs.append({
            "schema": "abba-harness/run/v1", "label": label, "variant": variant, "index": idx,
            "sha": ("a" if variant == "base" else "b") * 40, "status": "ok", "reason": None,
            "exit_code": 0, "timer": "perf_counter", "wall_s": 1.0 * f + 0.01 * idx,
            "items": items,
            "stages": {"encode": {"calls": 6, "self_cpu_s": 0.5 * f, "incl_cpu_s": 0.6 * f}},
            "metrics": {"mean_n_sec": 0.38 * f, "tokens": 1200},
            "machine": {"loadavg_before": [loads[0], 0.4, 0.3],
                        "loadavg_after": [loads[1], 0.4, 0.3], "cpu_freq_mhz": 2400.0,
                        "cores": 2}})
    return runs


def make_comparison(runs, identical=True, threshold=0.02):
    def mean(v):
        xs = [r["wall_s"] for r in runs if r["variant"] == v]
        return sum(xs) / len(xs)

    bm, cm = mean("base"), mean("candidate")
    parity = {"identical": identical, "reference": "A1", "items": 6, "fields_compared": 18,
              "fields_identical": 18 if identical else 17, "error_returns": 0,
              "errors_identical": True, "call_counts_identical": True, "golden": None,
              "mismatch_count": 0 if identical else 1, "mismatches": [], "divergence": []}
    if not identical:
        parity["mismatches"] = [{"run": "B1", "item": "item3", "field": "logits",
                                 "reason": "bytes differ"}]
        parity["divergence"] = [{"run": "B1", "item": "item3", "field": "logits",
                                 "kind": "float32", "elements": 100, "differing": 3,
                                 "max_abs": 1.5e-7, "max_ulp": 2,
                                 "note": "float values differ"}]
    return {"schema": "abba-harness/comparison/v1", "campaign": "demo", "status": "complete",
            "reason": None, "order": "ABBA",
            "runs": [{k: r[k] for k in ("label", "variant", "sha", "wall_s", "exit_code",
                                        "status")} for r in runs],
            "wall": {"timer": "perf_counter", "base_mean_s": bm, "candidate_mean_s": cm,
                     "saving_s": bm - cm, "saving_pct": 100 * (bm - cm) / bm,
                     "speedup": bm / cm},
            "stages": {"encode": {"calls_per_run": 6, "base_self_cpu_s": 0.5,
                                  "candidate_self_cpu_s": 0.4, "base_incl_cpu_s": 0.6,
                                  "candidate_incl_cpu_s": 0.48}},
            "parity": parity, "stats": analyze(runs, threshold, resamples=2000)}


def make_bundle(root: Path, name="demo", factor=0.8, identical=True, figure=True,
                loads=(0.5, 0.7), description="a synthetic campaign") -> Path:
    b = root / "evidence" / name
    (b / "data" / "runs").mkdir(parents=True)
    (b / "data" / "receipts").mkdir(parents=True)
    (b / "bagit.txt").write_text("BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n")
    runs = make_runs(factor, loads)
    for r in runs:
        (b / "data" / "runs" / f"{r['label']}.json").write_text(json.dumps(r))
    comp = make_comparison(runs, identical)
    (b / "data" / "comparison.json").write_text(json.dumps(comp))
    (b / "data" / "environment.json").write_text(json.dumps({
        "cpu_model": "Test CPU", "cores": 2, "memory_gib": 7.7, "kernel": "6.1.0",
        "python": "3.11.9", "packages": {"numpy": "2.1.0", "pandas": "2.2.3"},
        "harness_version": "0.1.0"}))
    (b / "data" / "campaign.json").write_text(json.dumps({
        "name": name, "description": description, "order": "ABBA", "slots": 2,
        "campaign_path": f"campaigns/{name}.yaml",
        "revisions": {"base": {"rev": "main~1", "sha": "a" * 40},
                      "candidate": {"rev": "b" * 40, "sha": "b" * 40}}}))
    (b / "data" / "receipts" / "cleanup.json").write_text(json.dumps(
        {"processes": [{"pid": 10 + k, "absent": True} for k in range(4)], "all_absent": True}))
    if figure:
        render(comp, runs, b / "data" / "figure.png")
    (b / "tagmanifest-sha256.txt").write_text(f"{'0' * 64}  bagit.txt\n{name}\n")
    return b


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    make_bundle(root, "zeta")
    make_bundle(root, "alpha", factor=1.0, identical=False, figure=False, loads=(3.5, 2.0),
                description="pipes | in text")
    return root


# ----------------------------------------------------------------------------- rendering
def test_report_content(repo):
    text = render_report(find_bundles(repo), repo)
    assert text.startswith("_Generated by `harness report`")
    assert "Do not edit by hand" in text.splitlines()[0]
    assert text.index("## alpha: `evidence/alpha`") < text.index("## zeta: `evidence/zeta`")
    z = text[text.index("## zeta"):]
    # runs in execution order (file names sort A1, A2, B1, B2)
    rows = [line.split("|")[1].strip() for line in z.splitlines()
            if line.startswith("| A") or line.startswith("| B")]
    assert rows[:4] == ["A1", "B1", "B2", "A2"]
    assert "base `main~1` (`aaaaaaaaaaaa`), candidate `bbbbbbbbbbbb`;" in z  # revisions once, not per run
    assert "| bbbbbbbbbbbb |" in z and "0.3040" in z  # SHA and metric, folded away
    assert "1.0000" in z and "0.8100" in z  # wall per run
    digest = hashlib.sha256((repo / "evidence/zeta/tagmanifest-sha256.txt").read_bytes())
    assert digest.hexdigest() in z
    assert "verdict: improved (exit 0)" in z
    assert "| encode  |               6 |      0.5000 |           0.4000 |            0.800 |" in z
    assert "seed 1130" in z and "Too few runs to conclude" in z
    assert "Drift" in z and "not flagged" in z
    figure_link = "![wall per run and stage self CPU: zeta](evidence/zeta/data/figure.png)"
    assert figure_link in z
    assert "harness reproduce evidence/zeta\nharness verify out/zeta.reproduction\n" in z
    assert "harness verify evidence/zeta" in z
    assert "python -S harness/rehash.py evidence/zeta" in z
    assert "sha256sum -c manifest-sha256.txt tagmanifest-sha256.txt" in z
    assert "Cleanup: 4 process(es) launched; all verified absent afterwards: yes." in z
    assert "Test CPU" in z and "numpy 2.1.0" in z
    assert "more work than cores" not in z


def test_report_mismatch_divergence_load_warning(repo):
    a = render_bundle(repo / "evidence/alpha", repo)
    assert "verdict: parity mismatch (exit 3)" in a
    assert "**Parity fails: outputs differ in 1 place(s), first" in a
    assert "| B1    | item3  | logits  | float32 |" in a
    assert "1.5000e-07" in a
    assert "more work than cores was runnable" in a and "A1 (load 3.50 on 2 cores)" in a
    assert "No figure in the bundle" in a
    assert "pipes \\| in text" in a


def test_runs_table_at_a_glance_metadata_folded_summary_says_disturbed(repo):
    """21.9: the runs table has the few columns a reader needs; workload metadata (a column
    per key made the AR loop's about 30 wide) is folded into a details block, split into
    what varies by run and what is the same in every run; the summary names disturbed runs."""
    text = render_report(find_bundles(repo), repo)
    z = text[text.index("## zeta"):]
    runs = z[z.index("### Runs"):z.index("### Wall time")]
    header = next(line for line in runs.splitlines() if line.startswith("| run"))
    assert [c.strip() for c in header.strip("|").split("|")] == [
        "run", "variant", "wall (s)", "item CPU (s)", "status", "disturbed / warnings"]
    assert "| A1    | base      |     1.0000 |         0.1120 | ok       | -" in runs
    folded = runs[runs.index("<details>"):runs.index("</details>")]
    assert "mean_n_sec" in folded and "mean_n_sec" not in header
    assert "| tokens     | 1200    |" in folded[folded.index("The same in every run:"):]
    assert "\n\n| run   | SHA " in folded  # a blank line after <summary>: markdown renders the table
    a = text[text.index("## alpha"):text.index("## zeta")]
    assert "| A1    | base      |     1.0000 |         0.1120 | ok       | load 3.50 on 2 cores" in a
    summary = text[:text.index("## alpha")]
    row = {line.split("|")[1].strip(): line for line in summary.splitlines() if line.startswith("| `")}
    assert "| load: A1, B1, B2, A2; drift flagged |" in row["`evidence/alpha`"]
    assert "| no " in row["`evidence/zeta`"]


def test_stage_tables_most_base_cpu_first_and_the_short_one_capped():
    """One owner for stage tables: REPORT.md, `harness run`, `compare DIR` and `compare A B`
    order stages by base self CPU and show candidate/base; the short table keeps the top few."""
    from harness.render.report import STAGES_SHOWN, stage_summary, stage_table

    stages = {f"s{k}": {"calls_per_run": 1, "base_self_cpu_s": 0.1 * k, "candidate_self_cpu_s": 0.05 * k}
              for k in range(STAGES_SHOWN + 2)}
    stages["s0"]["base_self_cpu_s"] = 0.0  # no base time: no ratio, listed last
    table, left = stage_table(stages)
    names = [line.split("|")[1].strip() for line in table.splitlines()[2:]]
    assert names == [f"s{k}" for k in range(STAGES_SHOWN + 1, -1, -1)] and left == 0
    assert "|            0.500 |" in table and table.splitlines()[-1].rstrip().endswith("n/a |")
    lines = stage_summary({"stages": stages})
    assert lines[0].endswith("; 2 smaller stage(s) left out (REPORT.md has all):")
    shown = [line.split("|")[1].strip() for line in lines[1].splitlines()[2:]]
    assert shown == [f"s{k}" for k in range(STAGES_SHOWN + 1, 1, -1)] and "incl" not in lines[1]
    assert stage_summary({"stages": {}}) == []


def test_report_is_deterministic(repo):
    bundles = find_bundles(repo)
    assert render_report(bundles, repo) == render_report(list(reversed(bundles)), repo)


def test_figure_link_relative_to_report_location(repo):
    text = render_report(find_bundles(repo), repo, report_dir=repo / "docs")
    assert "](../evidence/zeta/data/figure.png)" in text


def test_no_bundles(tmp_path):
    assert find_bundles(tmp_path) == []
    text = render_report([], tmp_path)
    assert text.startswith("_Generated by `harness report`")
    assert "No evidence yet" in text


def test_find_bundles_needs_bagit(tmp_path):
    (tmp_path / "evidence" / "x" / "data").mkdir(parents=True)
    (tmp_path / "evidence" / "deep" / "y").mkdir(parents=True)
    (tmp_path / "evidence" / "deep" / "y" / "bagit.txt").write_text("")
    assert find_bundles(tmp_path) == [tmp_path / "evidence" / "deep" / "y"]


def test_figure_is_png_and_byte_stable(repo, tmp_path):
    runs = make_runs()
    comp = make_comparison(runs)
    runs[1]["status"], runs[1]["wall_s"] = "failed", None
    render(comp, runs, tmp_path / "a.png")
    render(comp, runs, tmp_path / "b.png")
    data = (tmp_path / "a.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data == (tmp_path / "b.png").read_bytes()
    comp["stages"] = {}
    render(comp, runs, tmp_path / "c.png")  # no stages: still renders
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ----------------------------------------------------------------------------- CLI
# The `repo` fixture's bundles are made-up JSON, not sealed evidence: the report renders
# them, says at each section that they do not verify, and exits 1.
UNVERIFIED = 1


def test_cli_write_then_check(repo, tmp_path, capsys):
    out = tmp_path / "REPORT.md"
    assert cli(["report", "--root", str(repo), "-o", str(out)]) == UNVERIFIED
    assert "does not verify" in capsys.readouterr().err
    assert "**This bundle does not verify" in out.read_text()
    assert cli(["report", "--root", str(repo), "-o", str(out), "--check"]) == UNVERIFIED
    assert "matches its" in capsys.readouterr().out
    out.write_text(out.read_text().replace("0.8100", "0.7100"))
    capsys.readouterr()
    assert cli(["report", "--root", str(repo), "-o", str(out), "--check"]) == 1
    err = capsys.readouterr().err
    assert "differs" in err and "+" in err
    out.unlink()
    assert cli(["report", "--root", str(repo), "-o", str(out), "--check"]) == 1


def test_cli_default_output_and_empty_evidence(tmp_path, capsys):
    (tmp_path / "evidence").mkdir()
    assert cli(["report", "--root", str(tmp_path)]) == 0
    assert "No evidence yet" in (tmp_path / "REPORT.md").read_text()
    assert cli(["report", "--root", str(tmp_path), "--check"]) == 0


def test_cli_explicit_bundle_and_stdout(repo, capsys):
    capsys.readouterr()
    assert cli(["report", str(repo / "evidence/zeta"), "--root", str(repo), "-o", "-"]) == UNVERIFIED
    text = capsys.readouterr().out
    assert "## zeta" in text and "## alpha" not in text


def test_cli_named_bundles_preview_without_touching_report(repo, capsys):
    assert cli(["report", "--root", str(repo)]) == UNVERIFIED
    whole = (repo / "REPORT.md").read_text()
    capsys.readouterr()
    assert cli(["report", str(repo / "evidence/zeta"), "--root", str(repo)]) == UNVERIFIED
    assert "## zeta" in capsys.readouterr().out
    assert (repo / "REPORT.md").read_text() == whole  # the whole-evidence report is untouched


def test_cli_unusable_bundle(tmp_path, capsys):
    bad = tmp_path / "evidence" / "bad"
    (bad / "data").mkdir(parents=True)
    (bad / "bagit.txt").write_text("")
    (bad / "data" / "comparison.json").write_text("{not json")
    assert cli(["report", "--root", str(tmp_path), "-o", str(tmp_path / "R.md")]) == 2
    err = capsys.readouterr().err
    assert "invalid JSON" in err and "Traceback" not in err
    assert cli(["report", str(tmp_path / "nope"), "--root", str(tmp_path), "-o", "-"]) == 2


def test_a_sealed_bundle_is_reported_as_verified(demo_bundle, tmp_path, capsys):
    root = tmp_path / "repo"
    (root / "evidence").mkdir(parents=True)
    demo_bundle.rename(root / "evidence" / "demo")
    assert cli(["report", "--root", str(root)]) == 0
    text = (root / "REPORT.md").read_text()
    assert "does not verify" not in text
    assert "| yes " in text.split("## ")[0]  # the summary table's verified column


def test_rounds_statistics_show_the_band_and_a_per_item_table_worst_first():
    from harness.comparison import analysis
    from harness.render.report import _stats_section

    runs = []
    for k in range(1, 7):
        for variant, letter in (("base", "A"), ("candidate", "B")):
            items = [{"id": f"item{j:02d}", "error": None, "fields": {},
                      "wall_s": 0.01 * (1 + j) * ((2.0 if j == 3 else 0.5) if variant == "candidate" else 1.0)
                      * (1 + 0.001 * k)} for j in range(14)]
            for it in items:
                it["cpu_s"] = it["wall_s"]
            runs.append({"label": f"{letter}{k}", "variant": variant, "status": "ok", "items": items,
                         "wall_s": sum(it["wall_s"] for it in items), "machine": {}})
    stats = analysis.analyze(runs, 0.02)
    text = "\n".join(_stats_section({"stats": stats}))
    assert "**Verdict: improved** against the equal band +-2.00% (threshold 2.00%, no noise floor pinned)" in text
    assert "Per item, worst first: 1 of 14 items regressed beyond the band" in text
    table = [line for line in text.splitlines() if line.startswith("| item") and "candidate/base" not in line]
    assert table[0].startswith("| item03 ") and len(table) == 10  # capped
    assert "... and 4 more item(s)" in text
