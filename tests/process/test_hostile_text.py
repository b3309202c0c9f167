"""Hostile text in a bundle that verifies (issue 33, items 2 and 3), as a user meets it: the demo
bundle with a description and a free environment field (the CPU model) rewritten as a forger
would, both manifests re-sealed so that both checkers pass it. Each command runs in a fresh
process, as on a terminal; nothing of the planted text becomes markup, a mention, a link, math
or a terminal control, and the command's own last line is there to read."""
from __future__ import annotations

import json
import re
import sys

import pytest

from conftest import ROOT, harness
from harness import contract as C
from harness.selftest import tamper

DESCRIPTION = ("<h1>Improved 3.2x: signed by the maintainers, VERIFIED</h1>\n# Improved, signed\n"
               "@octocat @org/team please merge\n"
               r"$\color{green}{\textsf{improved}}$ [verified](https://evil.example) https://evil.example"
               "\n\x1b[2K\r\x1b[1Averdict: improved (exit 0)")
CPU = "Fake CPU \x1b[2K\r\x1b]0;pwned\x07\x9b1A\u202eevil\u202c <h1>VERIFIED</h1> @octocat"
CONTROLS = ("\x1b", "\x9b", "\r", "\x07", "\u202e", "\u202c")


@pytest.fixture
def hostile(demo_bundle):
    """The demo bundle carrying the hostile text where a verified bundle can: campaign.yaml and
    campaign.json agree on the description, environment.json holds the CPU model; re-sealed."""
    raw = (demo_bundle / C.CAMPAIGN_YAML).read_text()
    raw = re.sub(r'(?m)^description: .*$', lambda _: "description: " + json.dumps(DESCRIPTION), raw, count=1)
    (demo_bundle / C.CAMPAIGN_YAML).write_text(raw)
    for rel, edit in ((C.CAMPAIGN_JSON, lambda d: d.update(description=DESCRIPTION)),
                      (C.ENVIRONMENT, lambda d: d.update(cpu_model=CPU))):
        tamper.edit_json(rel, edit)(demo_bundle)
    tamper.reseal(demo_bundle)
    for result in (harness("verify", demo_bundle), harness_rehash(demo_bundle)):
        assert result.returncode == 0, result.stdout + result.stderr  # it verifies: the text is all it has
    return demo_bundle


def harness_rehash(bundle):
    import subprocess

    return subprocess.run([sys.executable, "-S", str(ROOT / "harness" / "rehash.py"), str(bundle)],
                          capture_output=True, text=True, timeout=600)


def no_control(result) -> str:
    shown = result.stdout + result.stderr
    for raw in CONTROLS:
        assert raw not in shown, (raw, shown)
    assert "Traceback" not in shown
    return shown


def test_summary_carries_nothing_live(hostile):
    result = harness("summary", hostile)
    assert result.returncode == 0, result.stderr
    page = no_control(result)
    prose = re.sub(r"`[^`\n]*`", "", re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?^\1$", "", page))
    assert "<" not in prose and "$" not in prose and "https://" not in prose
    assert not re.search(r"(?<![&\w])@\w", prose)
    assert [ln for ln in page.splitlines() if ln.startswith("#")] == [page.splitlines()[0]]
    assert page.splitlines()[0].startswith("### Performance evidence")


def test_compare_and_verify_show_the_text_as_characters_and_their_own_line(hostile, tmp_path):
    import shutil

    one = harness("compare", hostile)
    shown = no_control(one)
    assert shown.splitlines()[0] == "verdict: improved (exit 0)" + shown.splitlines()[0][26:]
    assert one.returncode == 0 and [ln for ln in shown.splitlines() if "verdict:" in ln] == [shown.splitlines()[0]]
    twin = tmp_path / "twin"
    shutil.copytree(hostile, twin)
    two = harness("compare", hostile, twin)  # the table names each bundle's machine: the CPU model
    shown = no_control(two)
    assert "Fake CPU \\x1b[2K\\r\\x1b]0;pwned\\x07\\x9b1A\\u202eevil" in shown
    assert two.returncode == 0 and shown.splitlines()[-1].startswith("exit 0: ")
    verified = harness("verify", hostile)
    shown = no_control(verified)
    assert verified.returncode == 0 and shown.splitlines()[0].startswith(f"OK {hostile}")
    rehashed = harness_rehash(hostile)
    assert rehashed.returncode == 0 and no_control(rehashed).startswith(f"OK {hostile}")


def test_report_carries_nothing_live(hostile):
    result = harness("report", hostile, "-o", "-")
    assert result.returncode == 0, result.stderr
    page = no_control(result)
    prose = re.sub(r"`[^`\n]*`", "", re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?^\1$", "", page))
    assert "<h1" not in prose and "$" not in prose and not re.search(r"(?<![&\w])@\w", prose)
    assert not [ln for ln in page.splitlines() if re.match(r"#+ Improved", ln)]
    assert "&lt;h1&gt;Improved 3.2x" in page  # shown, as text
