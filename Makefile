# Every target creates .venv and installs on first use (and when pyproject.toml changes).
# `make` alone lists the targets (`make help`): each rule's `## ` comment is its line there.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DATA ?= .capreg
LISTEN ?= 127.0.0.1:50051
HTTP_LISTEN ?= 127.0.0.1:8080
PYTEST_ARGS ?=

.PHONY: help install serve cluster test test-fast lint proto eval train train-encoder ablation bench bench-1m fast-paths context clean
.DEFAULT_GOAL := help

help: ## list the targets, one line each, and the variables serve takes
	@echo "Targets (make TARGET; the first run of any creates .venv and installs):"
	@awk -F ':.*## ' '/^[a-z][a-z0-9-]*:.*## / {printf "  make %-14s %s\n", $$1, $$2}' $(firstword $(MAKEFILE_LIST))
	@echo "Variables (make serve LISTEN=127.0.0.1:50061 HTTP_LISTEN=127.0.0.1:8081):"
	@echo "  LISTEN=HOST:PORT       gRPC address of serve (default $(LISTEN)); clients: --server or CAPREG_SERVER"
	@echo "  HTTP_LISTEN=HOST:PORT  HTTP/JSON and console address of serve (default $(HTTP_LISTEN))"
	@echo "  DATA=DIR               serve's database and development keys (default $(DATA))"
	@echo "  PYTEST_ARGS=...        options test and test-fast pass to pytest"

# The install names each step and lets pip name each package it fetches (about 80 s the first
# time), so a first run does not look stuck; off a terminal (CI logs) pip's download bars are
# drawn once, finished, not redrawn.
$(STAMP): pyproject.toml
	@echo "==> [1/2] $(VENV): a virtual environment for $$($(PYTHON) --version 2>&1)"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "==> [2/2] installing capreg and its pinned dependencies into $(VENV) (about 80 s the first time)"
	$(PY) -m pip install --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)
	@echo "==> installed: $(VENV)/bin/capreg; make help lists the targets"

install: ## create .venv and install capreg with its pinned dependencies
install: $(STAMP)

READ_SCOPES := hr:read,finance:read,crm:read,devops:read,support:read,workspace:read,analytics:read,legal:read,it:read

# The first run creates a development keys file (hashes only) with an admin key and a
# read-only key; their plaintext goes to $(DATA)/dev-keys.env (mode 0600) so they can be
# printed again. Development only: production keys come from `capreg keys add`.
$(DATA)/keys.yaml: | $(STAMP)
	@mkdir -p $(DATA)
	@umask 077; \
	admin=$$($(VENV)/bin/capreg keys add dev-admin --scopes 'registry:admin,*' --keys $@.tmp) && \
	reader=$$($(VENV)/bin/capreg keys add dev-reader --scopes '$(READ_SCOPES)' --keys $@.tmp) && \
	printf 'export CAPREG_API_KEY=%s\n# read-only: export CAPREG_API_KEY=%s\n' "$$admin" "$$reader" > $(DATA)/dev-keys.env && \
	mv $@.tmp $@

serve: ## serve the bundled catalogs: gRPC on LISTEN, HTTP and console on HTTP_LISTEN, store and keys in DATA
serve: $(STAMP) $(DATA)/keys.yaml
	@echo "Development keys (admin, then read-only); use them with: source $(DATA)/dev-keys.env"
	@cat $(DATA)/dev-keys.env
	$(VENV)/bin/capreg serve --db $(DATA)/registry.db --catalogs catalogs --listen $(LISTEN) --http $(HTTP_LISTEN) --keys $(DATA)/keys.yaml

# Three replicas on the machine's PostgreSQL (CLUSTER_DB: any postgresql:// DSN; the database
# is created when missing), the first registering the bundled catalogs. Ctrl-C stops all.
CLUSTER_DB ?= postgresql://postgres@127.0.0.1:5432/capreg
CLUSTER_PORTS ?= 50051 50052 50053
cluster: ## three replicas on PostgreSQL (CLUSTER_DB, CLUSTER_PORTS)
cluster: $(STAMP) $(DATA)/keys.yaml
	$(PY) -m registry.store.create_database '$(CLUSTER_DB)'
	@echo "Replicas on 127.0.0.1 ports $(CLUSTER_PORTS); client target:"
	@echo "  --server ipv4:$$(for p in $(CLUSTER_PORTS); do printf '127.0.0.1:%s,' $$p; done | sed 's/,$$//')"
	@cat $(DATA)/dev-keys.env
	@trap 'kill 0' INT TERM; first=1; for port in $(CLUSTER_PORTS); do \
	  extra=; [ $$first = 1 ] && extra="--catalogs catalogs"; first=0; \
	  $(VENV)/bin/capreg serve --db '$(CLUSTER_DB)' --listen 127.0.0.1:$$port --keys $(DATA)/keys.yaml $$extra & \
	done; wait

# The MCP Inspector CLI that tests/mcp_bridge/test_inspector.py drives, from the committed
# lockfile; reinstalled only when the lockfile changes.
INSPECTOR := tests/mcp_bridge/inspector
$(INSPECTOR)/node_modules/.installed: $(INSPECTOR)/package-lock.json
	cd $(INSPECTOR) && npm ci --no-audit --no-fund
	touch $@

# Debian's chromium, which the web console's browser tests drive through Playwright
# (tests/registry/http/test_console.py); installed with apt-get when missing.
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium

# pytest exits 5 when it collects no test; that is not a failure of the suite.
test: ## the whole suite, as CI runs it (installs chromium and the MCP Inspector when missing)
test: $(STAMP) $(INSPECTOR)/node_modules/.installed $(CHROMIUM)
	$(PY) -m pytest $(PYTEST_ARGS) || [ $$? -eq 5 ]

# The tier to run while working: every test that needs none of the model, PostgreSQL,
# chromium, the npm Inspector or the labeled datasets (the markers tests/conftest.py sets), so
# neither chromium nor the Inspector is installed. `make test` stays the whole suite (CI).
FAST_TESTS := not model and not postgres and not browser and not npm and not datasets
test-fast: ## the suite without the model, PostgreSQL, chromium, npm or the datasets (about two minutes)
test-fast: $(STAMP)
	$(PY) -m pytest -m '$(FAST_TESTS)' $(PYTEST_ARGS) || [ $$? -eq 5 ]

lint: ## ruff, ruff format --check, mypy --strict
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy docs/examples

# Held-out parts only (and seal-tools dev and mcp-agentstyle part A, tuning splits, for
# reference): the tuning parts of MetaTool and StableToolBench are what `make train` fits on.
# mcp-agentstyle is part B, held out: goal-phrased requests over real MCP servers, per kind.
EVAL_SETS := livemcpbench livemcpbench:steps seal-tools:dev seal-tools:test_in_domain seal-tools:test_out_domain stabletoolbench metatool metatool-multi mcp-agentstyle mcp-agentstyle:tuning
RESULTS := docs/results
EVAL_RETRIEVERS := --retriever bm25 --retriever dense --retriever hybrid-blend --retriever hybrid-no-lexical --retriever hybrid-no-intents --retriever hybrid-no-catalog --retriever hybrid-no-cut --retriever hybrid-no-literal --retriever hybrid-clauses-apart --retriever hybrid-z --retriever hybrid-minmax --retriever hybrid-rrf --retriever default

# Every held-out dataset split with every retriever; tables, JSON and recall curves into
# docs/results/.
eval: ## every held-out dataset with every retriever: tables, JSON and plots into docs/results/
eval: $(STAMP)
	mkdir -p $(RESULTS)
	for set in $(EVAL_SETS); do \
	  out=$(RESULTS)/$$(echo $$set | tr : -); \
	  $(VENV)/bin/capreg eval --dataset $$set $(EVAL_RETRIEVERS) --markdown $$out.md --json $$out.json --plot $$out.png || exit 1; \
	done
	$(PY) -m bench.summary

# The learned ranking stage, fitted on the tuning splits only (deterministic, one thread):
# indexer/retrieval/learned_stage.json and docs/results/training.md.
train: ## fit the learned ranking stage on the tuning splits
train: $(STAMP)
	$(VENV)/bin/capreg train --report $(RESULTS)/training.md

# The encoder fine-tuned on the tuning splits (seeded; about 20 minutes on two idle cores):
# indexer/embedding/tuned/, which makes it the served model, and
# docs/results/encoder-training.md; then the two fold encoders the learned stage is
# cross-fitted over (.capreg/encoder-folds/, about 10 minutes each). Not served today
# (decisions 0069, 0070): run `make train` after it, then `make eval`, to measure it.
train-encoder: ## fine-tune the encoder and its fold encoders on the tuning splits (about 40 minutes)
train-encoder: $(STAMP)
	$(VENV)/bin/capreg train-encoder --report $(RESULTS)/encoder-training.md
	$(VENV)/bin/capreg train-encoder --fold 0
	$(VENV)/bin/capreg train-encoder --fold 1

# The same fit, then every feature group left out in turn and the weak-match flag rates,
# scored on the held-out parts: docs/results/learned-ablation.md.
ablation: ## the learned stage's fit with each feature group left out
ablation: $(STAMP)
	$(VENV)/bin/capreg train --report $(RESULTS)/training.md --ablation $(RESULTS)/learned-ablation.md

# Latency, throughput, floor, registration, start-up and memory at 1k, 10k and 100k tools;
# then registration at scale (a thousand-plus catalog files, and 10k tools split 100 to
# 5,000 ways), into the same report.
bench: ## latency, throughput, registration, start-up and memory at 1k-100k tools
bench: $(STAMP)
	$(PY) -m bench.performance
	$(PY) -m bench.registration

# A million tools (mirror copies past the datasets' unique ones, embeddings shared), in its own
# report beside make bench's: the bench registers them in-process, then serves them.
bench-1m: ## the performance bench at 1,000,000 tools: docs/results/performance-1m.md
bench-1m: $(STAMP)
	$(PY) -m bench.performance --sizes 1000000 --out $(RESULTS)/performance-1m.md

# recall@5 of the int8 model and the IVF index against the exact float32 path, every set.
fast-paths: ## recall of the int8 model and the IVF index against the exact path
fast-paths: $(STAMP)
	$(PY) -m bench.fast_paths

# Tokens an agent carries: every schema in every turn vs discovery through the bridge.
context: ## context tokens: every schema in every turn vs discovery through the bridge
context: $(STAMP)
	$(VENV)/bin/capreg context --turns 5,10,20 --out $(RESULTS)/context.md
	$(VENV)/bin/capreg context --dataset livemcpbench --turns 5,10,20 --out $(RESULTS)/context-livemcpbench.md
	$(VENV)/bin/capreg context --turns 5,10,20 --catalogs catalogs --queries bench/data/sample-tasks.jsonl --out $(RESULTS)/context-catalogs.md

proto: ## regenerate registry/proto/ from the proto
proto: $(STAMP)
	$(PY) proto/generate.py

clean: ## remove .venv and the tool caches
clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
