# Two entry points on a fresh machine: `make demo` and `make test`.
# Both create .venv with pip when it is missing (uv would pull a CUDA torch here).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test venv report clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet 'torch==2.13.0'
	$(BIN)/pip install --quiet -e '.[campaigns,fleet,test]'
	@# valgrind for the instruction-count tests: installed only where apt can (root, no prompt);
	@# elsewhere those tests skip and say why.
	command -v valgrind >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  apt-get install -y -qq valgrind >/dev/null; } || \
	  echo "valgrind not installed: instruction-count tests will skip (sudo apt-get install valgrind)"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	rm -rf out/demo
	$(BIN)/harness run campaigns/span_finding_quick_zygote.yaml --out out/demo
	$(BIN)/harness verify out/demo --repo .
	$(BIN)/python -S harness/rehash.py out/demo
	@echo
	@echo "Next:"
	@echo "  .venv/bin/harness summary out/demo      # the claim as a Markdown section for a pull request"
	@echo "  .venv/bin/harness reproduce out/demo    # re-run it and judge the claim by the re-run"
	@echo "  .venv/bin/harness init --entry MODULE:FUNCTION --repo YOUR_REPO   # your own change (README)"

# Two passes, one suite: what times nothing and measures no process (the unit tier; tests marked
# `untimed`: the seeded simulations, the AR loop's bit-exactness sweeps) on every core at once
# (pytest-xdist), then the process and campaign tests alone, in order, since they measure real
# processes. `pytest -q` alone runs everything in one pass.
test: $(STAMP)
	$(BIN)/python -m pytest -q -n auto -m "unit or untimed"
	$(BIN)/python -m pytest -q -m "not unit and not untimed"

report: $(STAMP)
	$(BIN)/harness report

clean:
	rm -rf out .cache
