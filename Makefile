# Every target bootstraps .venv first, so `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export PYTEST_DISABLE_PLUGIN_AUTOLOAD := 1
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: venv demo test lint bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/companysim demo

# Two xdist workers, a test file each at a time; the code sandbox's own tests then run alone, because they
# assert that no process or container of the sandbox user is left anywhere on the machine.
test: $(STAMP)
	$(BIN)/python -m pytest -q -p xdist -n 2 --dist loadfile --ignore=tests/sandbox
	$(BIN)/python -m pytest -q tests/sandbox

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy worlds npcs mcp_tools graders scenarios sim

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info
