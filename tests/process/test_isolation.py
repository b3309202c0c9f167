"""Issue 33, item 7: state carried between fresh processes. A workload that caches what it
computed in its temporary folder and its home (and the XDG cache) would make every run after the
first read as a huge speed-up, and `reproduce` would reproduce it. Each run gets a fresh, empty
home and temporary folder of its own, removed after the run: the next run finds nothing there,
and environment.json records what was isolated and what was shared."""
from __future__ import annotations

import json

from conftest import cache_env, harness, no_traceback, small_campaign
from harness import contract as C
from harness.files import read_json

CACHER = '''
    """Caches its result in $TMPDIR, $HOME and $XDG_CACHE_HOME, and says what it found there."""
    import json
    import os
    import pathlib
    import tempfile

    import numpy as np


    class Bench:
        items = ["one"]

        def __init__(self, ctx):
            self.ctx = ctx

        def run(self, item):
            found = {}
            for var in ("TMPDIR", "HOME", "XDG_CACHE_HOME"):
                cache = pathlib.Path(os.environ[var]) / "abba-cache.txt"
                if cache.exists():
                    found[var] = cache.read_text()
                cache.write_text(self.ctx.label)
            # the folders of the runs before, beside this one's (its cwd)
            beside = sorted(str(p) for p in pathlib.Path.cwd().parent.rglob("abba-cache.txt"))
            print("ISOLATION " + json.dumps({
                "label": self.ctx.label, "tmp": os.environ["TMPDIR"], "home": os.environ["HOME"],
                "gettempdir": tempfile.gettempdir(), "found": found, "beside": beside}), flush=True)
            return {"x": np.zeros(1)}


    def setup(ctx):
        return Bench(ctx)
'''


def seen(bundle, label: str) -> dict:
    log = (bundle / C.log_path(label)).read_text()
    line, = [line for line in log.splitlines() if line.startswith("ISOLATION ")]
    return json.loads(line.removeprefix("ISOLATION "))


def test_a_cache_in_tmpdir_or_home_never_reaches_the_next_run(tmp_path):
    campaign = small_campaign(tmp_path, CACHER, "cacher:setup", order="ABBA")
    out = tmp_path / "bundle"
    result = harness("run", campaign, "--out", out, env=cache_env(tmp_path / "cache"), timeout=300)
    assert result.returncode == 0 and no_traceback(result), result.stdout + result.stderr
    runs = {label: seen(out, label) for label in ("A1", "B1", "B2", "A2")}
    for label, s in runs.items():
        assert s["label"] == label
        assert s["found"] == {}, (label, s)  # no run found an earlier run's cache
        # only its own (under the sandbox, not even the folder beside its own can be listed)
        assert set(s["beside"]) <= {f"{s['home']}/.cache/abba-cache.txt", f"{s['home']}/abba-cache.txt",
                                    f"{s['tmp']}/abba-cache.txt"}, (label, s)
        assert s["gettempdir"] == s["tmp"]
    assert len({s["tmp"] for s in runs.values()}) == 4 and len({s["home"] for s in runs.values()}) == 4
    environment = read_json(out / C.ENVIRONMENT)
    isolation = environment["isolation"]
    assert {"HOME", "TMPDIR", "TMP", "TEMP", "XDG_CACHE_HOME"} <= set(isolation["per_run"])
    assert isolation["declared"] == [] and any("page cache" in s for s in isolation["shared"])
    assert "HOME" not in environment["worker_env"] and "TMPDIR" not in environment["worker_env"]


def test_a_cache_the_campaign_declares_is_shared_and_recorded(tmp_path):
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    campaign = small_campaign(tmp_path, CACHER, "cacher:setup", order="AB",
                              env={"XDG_CACHE_HOME": str(shared)})
    out = tmp_path / "bundle"
    result = harness("run", campaign, "--out", out, env=cache_env(tmp_path / "cache"), timeout=300)
    assert result.returncode == 0 and no_traceback(result), result.stdout + result.stderr
    first = seen(out, "A1")["found"]  # the pre-flight's item ran last before it
    assert list(first) == ["XDG_CACHE_HOME"] and first["XDG_CACHE_HOME"].startswith("check:")
    assert seen(out, "B1")["found"] == {"XDG_CACHE_HOME": "A1"}  # declared, so shared: and said so
    isolation = read_json(out / C.ENVIRONMENT)["isolation"]
    assert "XDG_CACHE_HOME" not in isolation["per_run"] and isolation["declared"] == ["XDG_CACHE_HOME"]
