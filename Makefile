VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint bench install clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# llama-cpp-python compiles llama.cpp the first time (several minutes); pip caches the wheel.
	CMAKE_BUILD_PARALLEL_LEVEL=2 $(PY) -m pip install -q -e '.[app,local,test]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	# Loopback only (also in .streamlit/config.toml); the README says how to expose the app on purpose.
	$(VENV)/bin/streamlit run app.py --server.address 127.0.0.1

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	# mypy over the four packages (pyproject.toml), held to tests/mypy_baseline.txt: no new error, the list only shrinks.
	$(PY) tests/typecheck.py
	$(PY) -m pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: $(STAMP)
	for f in bench/*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
