# tractile: two commands set up everything.
#   make demo   creates .venv, installs tractile, builds the bundled demo model, dumps and runs it
#   make test   creates .venv, installs tractile with its test oracles, runs the whole test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JOBS ?= 2

.PHONY: demo test conformance bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[all,test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/make_demo_model.py build/demo.onnx
	$(BIN)/tractile dump build/demo.onnx -i N,1,28,28,f32
	$(BIN)/tractile run build/demo.onnx -i 1,1,28,28,f32

test: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) tests

conformance: $(STAMP)
	$(BIN)/tractile conformance --failures

bench: $(STAMP)
	$(BIN)/python bench/bench_onnx.py

clean:
	rm -rf $(VENV) build .pytest_cache
