"""What runs in the code under test's interpreter: the worker (`python -m harness.worker JOB.json`),
the zygote that forks workers (`launch: zygote`), the stage timers, the suite adapters and the
process controls a worker needs.

Its own room, as asv keeps asv_runner apart: CPython 3.9 or newer, the standard library and numpy
only, and of the harness only this package and the few bottom modules it shares with the runner
(contract, records, files, plan/workload, plan/suite, bundle/arrays). tests/unit/test_worker_room.py
holds every module of the room to that, lazy imports included, and to Python 3.9 (its syntax,
and under a real 3.9 where pyenv has one).
"""
