# Every target creates .venv and installs on first use (and when pyproject.toml changes).
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DATA ?= .capreg
LISTEN ?= 127.0.0.1:50051
PYTEST_ARGS ?=

.PHONY: install serve test lint proto eval bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

serve: $(STAMP)
	mkdir -p $(DATA)
	$(VENV)/bin/capreg serve --db $(DATA)/registry.db --catalogs catalogs --listen $(LISTEN)

# pytest exits 5 when it collects no test; that is not a failure of the suite.
test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS) || [ $$? -eq 5 ]

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

proto: $(STAMP)
	$(PY) proto/generate.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
