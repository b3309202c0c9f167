"""The outside review's checker-side cases (issue 26, item 5), each on a bundle the fake launcher
makes in a second, each re-sealed as a forger would: every one passed at least one checker, or
stopped a command with a traceback, before the closed contract (main at 1dfbb83)."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from checks_support import (bag_info, failed_bundle, forge, instruction_bundle, problems, refused,
                            reproduction, set_bag)
from fakes import Model, run_fake
from harness import contract as C
from harness.cli import main as cli
from harness.selftest import tamper

RE_RUN = "re-run its campaign with this harness"


@pytest.fixture
def full(full_fake):
    return full_fake  # the session's: never forged in place (bundle below is a private copy)


@pytest.fixture
def bundle(full, tmp_path):
    """A private copy of the full fake bundle, free to forge (its campaign file beside it)."""
    shutil.copytree(full.parent, tmp_path / "full", symlinks=True)
    return tmp_path / "full" / full.name


def one_line_each(lines_pair, *needles) -> None:
    for lines in lines_pair:
        assert len(lines) == 1 and all(n in lines[0] for n in needles), lines


# --- schema ids: one current set -----------------------------------------------------------------
@pytest.mark.parametrize("rel, kind", [(C.COMPARISON, "comparison"), (C.CAMPAIGN_JSON, "campaign")])
def test_a_schema_id_relabelled_to_an_older_version_is_refused_in_one_line(bundle, rel, kind, capsys):
    """A bundle relabelled comparison/v4 (or campaign/v5) was judged by the older, laxer rules."""
    stem, version = C.SCHEMAS[kind].rsplit("/v", 1)
    older = f"{stem}/v{int(version) - 1}"
    forge(bundle, {rel: lambda d: d.update(schema=older)}, rederive=kind != "comparison")
    one_line_each(problems(bundle), rel, f'schema "{older}"', f"reads {C.SCHEMAS[kind]} only", RE_RUN)
    assert cli(["compare", str(bundle)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("harness compare: error:") and "does not verify" in err


def test_every_older_schema_id_and_the_older_bag_format_are_refused(bundle):
    for kind, rel in (("run", C.run_path("A1")), ("runner", C.RUNNER), ("cleanup", C.CLEANUP),
                      ("environment", C.ENVIRONMENT), ("golden", C.GOLDEN), ("builds", C.BUILDS)):
        copy = bundle.parent / f"relabel-{kind}"
        shutil.copytree(bundle, copy)
        older = C.SCHEMAS[kind][:-1] + str(int(C.SCHEMAS[kind][-1]) - 1)
        forge(copy, {rel: lambda d, o=older: d.update(schema=o)})
        for lines in problems(copy):
            if older in C.PREVIOUS_SCHEMAS.get(kind, {}):  # still read, as a whole earlier generation
                assert refused(lines, rel, "[parsing] interference: present, but a", f"{older} record"), lines
            else:
                assert refused(lines, rel, "[parsing] schema", RE_RUN), (kind, lines)
    older = C.FORMAT.rsplit("/v", 1)[0] + "/v5"
    bag_info(bundle, set_bag("Abba-Format", older))
    for lines in problems(bundle):  # a format no generation had (v5 never had the closed contract)
        assert len(lines) == 1 and lines[0].startswith(
            f"unusable: {C.BAG_INFO}: Abba-Format \"{older}\" with schema ids of no generation this checker knows: "
            "a newer harness's bundle (it says Bag-Software-Agent \"abba-harness ") and \
            f"this checker reads {C.FORMAT} only" in lines[0] and RE_RUN in lines[0], lines


# --- bag-info: exactly the contract's keys ----------------------------------------------------------
def test_an_extra_bag_info_claim_is_refused(bundle):
    """`Abba-Verdict: improved, 5000x, reproduced on 3 machines` rode along in bag-info.txt, where
    a reader of the bag sees it and no checker read it."""
    bag_info(bundle, lambda text: text + "Abba-Verdict: improved, 5000x, reproduced on 3 machines\n")
    one_line_each(problems(bundle), "bag-info.txt: [bag-info]", "Abba-Verdict is not a key the contract declares")


# --- instruction counts ---------------------------------------------------------------------------
def test_instruction_counts_multiplied_are_refused(tmp_path, counted_fake):
    """The base's counts x60, re-derived into comparison.json: more than a core retires in the
    items' walls. The same x60 written into comparison.json alone: not what the records give."""
    honest = counted_fake  # the session's instruction bundle: forged only in copies
    assert problems(honest) == ([], [])
    records = shutil.copytree(honest, tmp_path / "records")
    forge(records, {C.instructions_path(label): lambda r: r.update(instructions=r["instructions"] * 60)
                    for label in ("IA1", "IA2")})
    for lines in problems(records):
        assert refused(lines, C.instructions_path("IA1"), "[physics]", "more than a core retires"), lines
    claim = shutil.copytree(honest, tmp_path / "claim")
    forge(claim, {C.COMPARISON: lambda c: c["instructions"]["base"].update(
        counts=[n * 60 for n in c["instructions"]["base"]["counts"]])}, rederive=False)
    for lines in problems(claim):
        assert refused(lines, "data/comparison.json: [derived] instructions.base.counts[0] claims"), lines


def test_a_spread_claimed_as_repeated_exactly_is_refused(tmp_path, monkeypatch):
    """Counts 0.077% apart are not "repeated": comparison.json claiming they are is refused."""
    honest = instruction_bundle(tmp_path / "i", monkeypatch, counts={"IA1": 300_000_000, "IA2": 300_231_000})
    assert problems(honest) == ([], [])
    base = json.loads((honest / C.COMPARISON).read_text())["instructions"]["base"]
    assert base["repeated"] is False and base["spread_pct"] == 0.077

    def claim(c):
        c["instructions"]["base"].update(repeated=True, spread_pct=0.0)
        c["instructions"]["repeated"] = True
    forge(honest, {C.COMPARISON: claim}, rederive=False)
    for lines in problems(honest):
        assert refused(lines, "[derived] instructions.base.repeated claims true, the run records give false"), lines
        assert refused(lines, "[derived] instructions.base.spread_pct claims 0.0"), lines


# --- logs ------------------------------------------------------------------------------------------
def test_an_edited_worker_log_is_refused_through_its_record(bundle):
    log = bundle / C.log_path("B1")
    log.write_bytes(log.read_bytes().replace(b"model", b"MODEL") + b"all items passed\n")
    tamper.reseal(bundle)
    for lines in problems(bundle):
        assert refused(lines, C.log_path("B1"), "[files]"), lines


def test_a_log_edited_with_its_record_still_shows_the_worker_that_died(bundle):
    """The forger re-hashes the log into its record: a traceback under an ok record is refused."""
    import hashlib

    log = bundle / C.log_path("B1")
    data = b"Traceback (most recent call last):\nMemoryError\n"
    log.write_bytes(data)
    forge(bundle, {C.run_path("B1"): lambda r: r["log"].update(bytes=len(data), written=len(data),
                                                                sha256=hashlib.sha256(data).hexdigest())})
    for lines in problems(bundle):
        assert refused(lines, C.log_path("B1"), "[status] holds Traceback"), lines


# --- the plan's items ----------------------------------------------------------------------------
def _drop(item_id):
    def edit(record):
        record["items"] = [it for it in record["items"] if it["id"] != item_id]
    return edit


def test_runs_that_omit_planned_items_are_refused(bundle):
    """Every run dropping the item that recorded an error (parity then reads clean), or one run
    dropping another item: refused by the plan, runner.json's items."""
    labels = json.loads((bundle / C.CAMPAIGN_JSON).read_text())["labels"]
    everywhere = shutil.copytree(bundle, bundle.parent / "everywhere")
    forge(everywhere, {C.run_path(label): _drop("item-3") for label in labels})
    for lines in problems(everywhere):
        assert refused(lines, "[plan] items", "missing [\"item-3\"]"), lines
    forge(bundle, {C.run_path("B2"): _drop("item-1")})
    for lines in problems(bundle):
        assert refused(lines, C.run_path("B2"), "[plan] items", "item-1"), lines


def test_a_plan_forged_consistently_shows_in_the_golden_coverage_line(bundle, capsys):
    """The erroring item dropped from every run and from runner.json's plan too: the records
    agree, so both checkers pass, and the golden file (pinned) says one of its items went
    unchecked, in the summary's and the report's coverage line."""
    labels = json.loads((bundle / C.CAMPAIGN_JSON).read_text())["labels"]

    def plan(runner):
        runner["items_all"] = [i for i in runner["items_all"] if i != "item-3"]
        runner["items"] = [i for i in runner["items"] if i != "item-3"]
    forge(bundle, {C.RUNNER: plan, **{C.run_path(label): _drop("item-3") for label in labels}})
    assert problems(bundle) == ([], [])
    golden = json.loads((bundle / C.COMPARISON).read_text())["parity"]["golden"]
    assert (golden["items_checked"], golden["items"]) == (4, 5)
    assert cli(["summary", str(bundle)]) == 0
    assert "golden file identical on 4 of its 5 items" in capsys.readouterr().out
    assert cli(["report", str(bundle), "-o", "-"]) == 0
    assert "golden file: 4 of its 5 items checked" in capsys.readouterr().out


# --- a reproduction receipt made by hand -------------------------------------------------------------
def test_a_reproduction_receipt_made_by_hand_is_refused_and_never_shown(bundle, tmp_path, capsys):
    """A bundle that re-ran nothing of the kind its receipt says: its own side is consistent (so
    rehash.py, which has only this bundle, passes it and says what it left), `verify --original`
    re-derives the receipt from the two bundles and refuses it, and `harness report` never shows
    its verdict."""
    from harness.bundle import read
    from harness.judge import reproduce

    again = reproduction(bundle, tmp_path / "again")
    assert problems(again, original=bundle) == ([], [])
    honest = json.loads((again / C.REPRODUCTION).read_text())
    forged_reason = "re-run on 3 machines, 5000x faster on every one"

    def by_hand(receipt):
        receipt.update(verdict="reproduced", reason=forged_reason)
        receipt["timing"].update(word="reproduced", holds=True)
        receipt["original"]["claim"]["verdict"] = "improved"
    forge(again, {C.REPRODUCTION: by_hand}, rederive=False)
    r, v = problems(again)
    assert r == [] and v == []  # the receipt's other side needs the original
    _, v = problems(again, original=bundle)
    assert refused(v, C.REPRODUCTION, "[original] verdict claims \"reproduced\""), v
    assert refused(v, C.REPRODUCTION, "[original] reason claims"), v
    assert cli(["verify", str(again), "--original", str(bundle)]) == 1
    capsys.readouterr()
    assert cli(["report", str(bundle), str(again), "-o", "-"]) == 0
    out = capsys.readouterr().out
    assert "receipt does not re-derive from the two bundles: not shown" in out
    assert forged_reason not in out and honest["reason"][:40] not in out
    # the honest receipt, for contrast, is shown with its verdict
    assert reproduce.receipt(read.load(bundle), read.load(again)).verdict == honest["verdict"]


# --- numbers no machine writes -----------------------------------------------------------------------
@pytest.mark.parametrize("rel", [C.run_path("A1"), C.CAMPAIGN_JSON])
@pytest.mark.parametrize("digits", [401, 5000])
def test_an_integer_of_hundreds_of_digits_is_one_line(bundle, rel, digits, capsys):
    """10**400 and a 5000-digit integer: Python builds them digit by digit (and 3.11 refuses to
    print them); the strict parser refuses them from their length, in one line."""
    path = bundle / rel
    path.write_text(re.sub(r'"slots": \d+', lambda m: '"slots": 1' + "0" * (digits - 1), path.read_text(), count=1))
    tamper.reseal(bundle)
    one_line_each(problems(bundle), rel, f"[parsing] an integer of {digits} digits (at most {C.MAX_INT_DIGITS})")
    assert cli(["compare", str(bundle)]) == 1
    cap = capsys.readouterr()
    assert cap.out.count("FAIL ") == 1 and f"an integer of {digits} digits" in cap.out
    assert cap.err.count("\n") == 1 and "Traceback" not in cap.out + cap.err


# --- REPORT.md: bundle text is inert ------------------------------------------------------------------
def test_bundle_text_renders_inert_and_never_hides_the_next_bundles_failure(tmp_path, capsys):
    """A description holding an HTML comment opener, a table break, a code span and a line break
    (honest: campaign.yaml says so): it renders as inert lines, and the next bundle's "does
    not verify" is still there to read."""
    text = "fast path <!-- | `rm -rf` \n## Verified: 5000x"
    hostile, _ = run_fake(tmp_path / "hostile", Model(items=3), rounds=3, description=text)
    broken, _ = run_fake(tmp_path / "broken", Model(items=3), rounds=3)
    forge(broken.out, {C.COMPARISON: lambda c: c["wall"].update(speedup=5000.0)}, rederive=False)
    assert cli(["report", str(hostile.out), str(broken.out), "-o", "-"]) == 1
    out = capsys.readouterr().out
    assert "<!--" not in out and "\n## Verified" not in out
    # each line of it escaped (a hard line break between them): the second line starts no header
    assert "fast path &lt;!-- \\| \\`rm -rf\\`\\\n&#35;&#8288;&#35;&#8288; Verified: 5000x" in out
    # the broken bundle's own section, after the hostile one, says so in the open
    assert out.rindex("**does not verify (") > out.index("fast path &lt;!--")


def test_a_workload_file_named_bagit_txt_does_not_stop_the_report(tmp_path, capsys):
    """A bundle's stored workload holding a bagit.txt: the report looks one level under
    evidence/ and takes only the bundle."""
    root = tmp_path / "repo"
    (tmp_path / "w").mkdir()
    outcome, _ = run_fake(tmp_path / "w", Model(items=3), out=root / "evidence" / "model", rounds=3)
    (root / "evidence" / "model" / "data" / "workload" / "bagit.txt").write_bytes(C.BAGIT_TXT)
    rows = json.loads((outcome.out / C.WORKLOAD).read_text())
    rows["files"].append({"path": "bagit.txt", "size": len(C.BAGIT_TXT),
                          "sha256": __import__("hashlib").sha256(C.BAGIT_TXT).hexdigest()})
    rows["files"].sort(key=lambda r: r["path"].encode())
    # as the harness would have stored it, had the workload folder held it: receipt, digests re-derived
    from harness.plan import workload

    rows["digest"] = workload.digest(rows["files"])
    labels = json.loads((outcome.out / C.CAMPAIGN_JSON).read_text())["labels"]
    forge(outcome.out, {C.WORKLOAD: lambda _: rows,
                        **{C.run_path(label): lambda r: r.update(workload_sha256=rows["digest"]) for label in labels}})
    assert problems(outcome.out) == ([], [])
    from harness.judge.survey import find_bundles

    assert find_bundles(root) == [outcome.out]
    assert cli(["report", "--root", str(root), "-o", "-"]) == 0
    assert "model" in capsys.readouterr().out


def test_a_failed_bundle_is_judged_by_the_same_closed_rules(tmp_path):
    """A run that failed carries nulls where measurements would be: the contract holds those
    records too, and an extra key in one is refused like any other."""
    b = failed_bundle(tmp_path / "failed")
    assert problems(b) == ([], [])
    forge(b, {C.run_path("B2"): lambda r: r.update(measurements_lost=True)})
    for lines in problems(b):
        assert refused(lines, C.run_path("B2"), "measurements_lost: not declared by the contract"), lines


def test_a_bundle_too_large_for_the_memory_given_is_one_line(bundle, monkeypatch, capsys):
    """An honest bundle near the contract's limits checked where memory is short: MemoryError in
    the re-derivation was a traceback; it is one line saying where to run it."""
    from harness.comparison import derive

    def short_of_memory(*args, **kwargs):
        raise MemoryError
    monkeypatch.setattr(derive, "derive", short_of_memory)
    assert cli(["verify", str(bundle)]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err == (f"harness verify: error: {bundle}: checking the bundle needs more memory "
                                         "than this process may use; run it where it may use more (ulimit -v)\n")
    assert cli(["compare", str(bundle)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_refusal_is_a_value_naming_its_file_and_rule_and_reads_as_its_line(bundle):
    """Issue 34: callers sort problems by what they are (p.rule == "anchors"), never by
    matching the printed line again; the line stays what both checkers print."""
    from harness import rehash

    forge(bundle, {"data/runs/A1.json": lambda r: r.update(sha="0" * 40)})
    mine, theirs = problems(bundle)
    for line in mine + theirs:
        assert isinstance(line, rehash.Problem)
        assert str(line) == f"{rehash.show(line.file)}: " + (f"[{line.rule}] " if line.rule else "") + line.text
    assert any(p.file == "data/runs/A1.json" and p.rule for p in mine)
    assert {(p.file, p.rule, p.text) for p in mine} <= {(p.file, p.rule, p.text) for p in theirs}
    odd = rehash.Problem("data/a\nb.json", "unreadable", None)
    assert str(odd) == "'data/a\\nb.json': unreadable" and odd.rule is None and odd.file == "data/a\nb.json"
    import copy
    import pickle

    for again in (copy.copy(odd), copy.deepcopy(odd), pickle.loads(pickle.dumps(odd))):  # made again from its parts
        assert (again, again.file, again.rule, again.text) == (odd, odd.file, odd.rule, odd.text)
