"""campaigns/peers/peers.py's pure parts: reading pyperf compare_to, the Welch test, the outcome
of a repetition, the table, and how any asv benchmark is called and selected. No process is
started."""
from __future__ import annotations

import importlib.util
import math
import sys

import pytest

from conftest import ROOT

_spec = importlib.util.spec_from_file_location("peers", ROOT / "campaigns" / "peers" / "peers.py")
peers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peers)

SIGNIFICANT = """\
### all_shortest_paths_grid10 ###
Mean +- std dev: [a] 104 ms +- 9 ms -> [b] 92.6 ms +- 8.1 ms: 1.12x faster
Significant (t=6.83)
"""
NOT_SIGNIFICANT = """\
### all_shortest_paths_grid10 ###
Mean +- std dev: [a] 101 ms +- 12 ms -> [b] 103 ms +- 11 ms: 1.02x slower
Not significant!
"""


def test_compare_to_significant_faster():
    got = peers.parse_compare_to(SIGNIFICANT)
    assert got["verdict"] == "faster" and got["t"] == 6.83
    assert got["ratio"] == pytest.approx(1 / 1.12)


def test_compare_to_not_significant_keeps_the_ratio():
    got = peers.parse_compare_to(NOT_SIGNIFICANT)
    assert got == {"verdict": "not significant", "ratio": 1.02, "t": None}


def test_compare_to_slower_and_no_change():
    assert peers.parse_compare_to(SIGNIFICANT.replace("1.12x faster", "1.30x slower"))["verdict"] == "slower"
    same = peers.parse_compare_to(SIGNIFICANT.replace("1.12x faster", "no change"))
    assert same["ratio"] == 1.0 and same["verdict"] == "no change"


def test_compare_to_unreadable_output_is_an_error():
    with pytest.raises(ValueError, match="no 'Nx faster"):
        peers.parse_compare_to("ERROR: unable to load a.json\n")
    with pytest.raises(ValueError, match="neither Significant"):
        peers.parse_compare_to(SIGNIFICANT.replace("Significant (t=6.83)\n", ""))


def test_pyperf_values_leave_out_calibration_and_warmups():
    doc = {"benchmarks": [{"runs": [{"warmups": [[1, 0.5]]}, {"warmups": [[1, 0.4]], "values": [0.1, 0.2]},
                                    {"values": [0.3]}]}]}
    assert peers.pyperf_values(doc) == [0.1, 0.2, 0.3]


@pytest.mark.parametrize("t, df, p", [
    (2.0, 10, 0.07338803),      # textbook values of Student's t, two-sided
    (2.228138852, 10, 0.05),
    (1.0, 1, 0.5),              # Cauchy: P(|T| > 1) = 1/2
    (0.0, 7, 1.0),
    (3.5, 4.37, None),          # a fractional df (Welch's) has to work too
])
def test_t_two_sided_p(t, df, p):
    got = peers.t_sf2(t, df)
    if p is None:
        assert 0.0 < got < 0.05
    else:
        assert got == pytest.approx(p, abs=1e-6)


def test_t_two_sided_p_large_df_is_normal():
    assert peers.t_sf2(1.959963985, 1e7) == pytest.approx(0.05, abs=1e-5)


def test_welch_stdlib_matches_a_hand_computation():
    a = [1.0, 1.1, 0.9, 1.05, 0.95]
    b = [0.9, 0.92, 0.88, 0.91, 0.89, 0.9]
    got = peers.welch(a, b, use_scipy=False)
    # means 1.0 and 0.9, variances 0.00625 and 0.0002: t = -0.1 / sqrt(0.00125 + 0.0002/6)
    se2 = 0.00625 / 5 + 0.0002 / 6
    assert got["t"] == pytest.approx(-0.1 / math.sqrt(se2))
    assert got["df"] == pytest.approx(se2 ** 2 / ((0.00625 / 5) ** 2 / 4 + (0.0002 / 6) ** 2 / 5))
    assert got["ratio"] == pytest.approx(0.9) and got["by"] == "stdlib"
    assert got["p"] == pytest.approx(peers.t_sf2(got["t"], got["df"]))
    assert 0.02 < got["p"] < 0.05
    assert peers.hyperfine_verdict(got) == "faster"


def test_welch_agrees_with_scipy_when_installed():
    pytest.importorskip("scipy")
    a, b = [3.1, 2.9, 3.3, 3.0, 3.2, 2.8], [3.4, 3.6, 3.3, 3.7]
    ours, theirs = peers.welch(a, b, use_scipy=False), peers.welch(a, b)
    assert theirs["by"] == "scipy" and ours["p"] == pytest.approx(theirs["p"], rel=1e-6)


def test_welch_same_values_and_too_few():
    same = peers.welch([1.0, 1.0], [1.0, 1.0], use_scipy=False)
    assert same["p"] == 1.0 and peers.hyperfine_verdict(same) == "not significant"
    with pytest.raises(ValueError, match="at least two"):
        peers.welch([1.0], [1.0, 2.0])


@pytest.mark.parametrize("kind, verdict, outcome", [
    ("change", "faster", "detected"), ("change", "improved", "detected"),
    ("change", "slower", "wrong"), ("change", "regressed", "wrong"), ("change", "equal", "wrong"),
    ("change", "not significant", "undecided"), ("change", "inconclusive", "undecided"),
    ("aa", "faster", "false claim"), ("aa", "regressed", "false claim"), ("aa", "equal", "equal"),
    ("aa", "not significant", "undecided"), ("aa", "inconclusive", "undecided"),
    ("aa", "error", "error"), ("change", "timeout", "error"),
])
def test_classify(kind, verdict, outcome):
    assert peers.classify(kind, verdict) == outcome


def _rep(tool, kind, wall, verdict, ratio, load=(4.0, 3.0, 2.0)):
    return {"tool": tool, "kind": kind, "wall_s": wall, "verdict": verdict, "ratio": ratio,
            "outcome": peers.classify(kind, verdict), "load_before": list(load), "load_after": [5.5, 4, 3],
            "steal_share": 0.01}


def test_table_counts_and_spreads_per_tool():
    reps = [_rep("pyperf", "change", 30, "faster", 0.9), _rep("pyperf", "change", 40, "not significant", 0.97),
            _rep("pyperf", "change", 50, "faster", 0.88), _rep("pyperf", "aa", 31, "slower", 1.05),
            _rep("pyperf", "aa", 33, "not significant", 0.99),
            _rep("harness", "change", 80, "inconclusive", 0.93), _rep("harness", "aa", 90, "error", None)]
    md = peers.table(reps, {"model": "AMD EPYC", "cores": 2})
    rows = {line.split("|")[1].strip(): line for line in md.splitlines() if line.startswith("| ")}
    assert set(rows) == {"tool", "pyperf", "harness"}  # tools without repetitions have no row
    py = [c.strip() for c in rows["pyperf"].split("|")[1:-1]]
    assert py == ["pyperf", "40 [30, 50]", "2 of 3 (faster, not significant, faster)", "0.900", "32 [31, 33]",
                  "1 of 2 (slower, not significant)", "0.990..1.050"]
    hz = [c.strip() for c in rows["harness"].split("|")[1:-1]]
    assert hz[2] == "0 of 1 (inconclusive)" and hz[5] == "0 of 1 (1 failed) (error)" and hz[6] == "-"
    assert "AMD EPYC, 2 cores" in md and "busy" in md and "4.0..5.5" in md and "steal 1.0..1.0%" in md


def test_steal_share():
    before = [100, 0, 50, 800, 0, 0, 0, 10, 0, 0]
    after = [150, 0, 70, 900, 0, 0, 0, 20, 0, 0]
    assert peers.steal_share(before, after) == pytest.approx(10 / 180)
    assert peers.steal_share([], after) is None


def test_campaign_yaml_names_the_suite_and_the_revisions():
    text = peers.campaign_yaml(peers.Path("/tmp/nx"), "a" * 40, "b" * 40, r"Grid\.x\(10\)", "peers_nx_change")
    assert 'target: {repo: "/tmp/nx"}' in text and f'rev: "{"a" * 40}"' in text
    assert "kind: asv" in text and r'select: "Grid\\.x\\(10\\)"' in text and "rounds: auto" in text


def test_table_gives_times_net_of_a_host_stop_and_marks_it():
    reps = [_rep("hyperfine", "change", 30, "faster", 0.9), {**_rep("hyperfine", "change", 950, "faster", 0.8),
                                                             "paused_s": 900.0}]
    md = peers.table(reps, {"model": "x", "cores": 2})
    row = [c.strip() for c in md.splitlines()[2].split("|")[1:-1]]
    assert row[1] == "40 [30, 50]" and row[2] == "2 of 2 (faster, faster*)"
    assert "1 of 2 tool runs (marked *) were stopped by the host for 900 s" in md


def test_any_asv_benchmark_is_called_as_asv_calls_it_and_selected_by_its_name(tmp_path, monkeypatch):
    package = tmp_path / "benchmarks" / "peersbench"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "bench_paths.py").write_text("calls = []\n"
                                            "class Grid:\n"
                                            "    def setup(self, n): self.n = n\n"
                                            "    def time_paths(self, n): calls.append((self.n, n))\n")
    folder, dotted = peers.bench_module("benchmarks/peersbench/bench_paths.py", tmp_path)
    assert (folder, dotted) == (peers.Path("benchmarks"), "peersbench.bench_paths")
    (tmp_path / "benchmarks" / "__init__.py").write_text("")  # a package one level up: asv's rule climbs
    assert peers.bench_module("benchmarks/peersbench/bench_paths.py", tmp_path) == (
        peers.Path("."), "benchmarks.peersbench.bench_paths")

    assert peers.parse_param("10") == 10 and peers.parse_param("'w(10)'") == "w(10)"
    assert peers.parse_param("wheel_graph(1000)") == "wheel_graph(1000)" and peers.parse_param(None) is None
    monkeypatch.syspath_prepend(str(tmp_path / folder))
    setup, stmt = peers.setup_stmt(dotted, "Grid.time_paths", 10)
    env = {}
    try:
        exec(setup, env)
        exec(stmt, env)
        assert env["b"].n == 10 and sys.modules[dotted].calls == [(10, 10)]
    finally:  # the package this test made is not left for another test to import
        for name in [n for n in sys.modules if n == "benchmarks" or n.startswith("benchmarks.")]:
            del sys.modules[name]
    assert peers.setup_stmt("m", "time_f", None) == ("from m import time_f as f", "f()")

    import re
    select = re.compile(peers.asv_select("Grid.time_paths", 10))
    assert select.search("bench_paths.Grid.time_paths(10)")
    assert not select.search("bench_paths.Grid.time_paths(100)") and not select.search("bench_paths.Grid.time_paths_more(10)")
    assert re.compile(peers.asv_select("H.time_h", "w(10)")).search("m.H.time_h('w(10)')")


def test_the_harness_is_given_enough_calls_per_timed_item_for_a_short_benchmark():
    assert peers.calls_for(0.0002) == 50 and peers.calls_for(0.004) == 3
    assert peers.calls_for(0.01) == 1 and peers.calls_for(2.0) == 1
    text = peers.campaign_yaml(peers.Path("/tmp/nx"), "a" * 40, "b" * 40, "x", "n", "b/b/m.py", "C.time_x", 50)
    assert "  number: 50\n" in text and '"peers.py - asv C.time_x, aaaaaaaaa -> bbbbbbbbb"' in text
    assert "number" not in peers.campaign_yaml(peers.Path("/tmp/nx"), "a" * 40, "b" * 40, "x", "n")
