"""A worker that prints 1.1 GiB (issue 26): the bundle keeps its head and tail with the cut
recorded and bound, `harness run` says complete, and both checkers accept what it sealed. Heavy
(4.4 GB written to the scratch disk: the pre-flight and three runs print it), hence this tier."""
from __future__ import annotations

from conftest import cache_env, harness, no_traceback, small_campaign as _campaign
from harness import contract as C, rehash
from harness.files import read_json

TALKER = '''
    """Prints {mib} MiB to stdout in every run, between a first and a last line."""
    import sys

    import numpy as np


    class Bench:
        items = ["one"]

        def run(self, item):
            sys.stdout.write("first line\\n")
            chunk = "y" * (1 << 20)
            for _ in range({mib}):
                sys.stdout.write(chunk)
            sys.stdout.write("\\nlast line\\n")
            sys.stdout.flush()
            return {{"x": np.zeros(1)}}


    def setup(ctx):
        return Bench()
'''



def test_a_worker_that_prints_a_gigabyte_keeps_its_head_and_tail(tmp_path):
    campaign = _campaign(tmp_path, TALKER.format(mib=1100), "talker:setup", order="AB")
    out = tmp_path / "bundle"
    result = harness("run", campaign, "--out", out, env=cache_env(tmp_path / "cache"), timeout=600)
    assert result.returncode == 0 and no_traceback(result), result.stdout + result.stderr
    record = read_json(out / C.run_path("A1"))
    log = record["log"]
    assert log["truncated"] and log["written"] > 1100 << 20 and log["bytes"] <= C.log_limit()
    stored = (out / log["path"]).read_bytes()
    assert stored.startswith(b"first line\n") and stored.endswith(b"last line\n")
    assert not rehash.rehash(str(out)).problems
    assert harness("verify", out).returncode == 0
