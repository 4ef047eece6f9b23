# tractile: two commands set up everything.
#   make demo   creates .venv, installs tractile, builds the bundled demo model, dumps and runs it
#   make test   creates .venv, installs tractile with its test oracles, runs the whole test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JOBS ?= 2

.PHONY: demo test conformance bench clean browser

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[all,test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/make_demo_model.py build/demo.onnx
	$(BIN)/tractile dump build/demo.onnx -i N,1,28,28,f32
	$(BIN)/tractile run build/demo.onnx -i 1,1,28,28,f32

test: $(STAMP) browser
	$(BIN)/python -m pytest -n $(JOBS) tests

# the graph page's browser test drives Debian's chromium through chromium-driver: installed here
# when missing and apt-get is usable (as root); otherwise that test skips and says what is missing
browser:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium and chromium-driver for the browser test"; \
	  { DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; } \
	    >/dev/null 2>&1 </dev/null || echo "could not install chromium: the browser test will skip"; \
	else echo "chromium or chromedriver missing and apt-get is not usable: the browser test will skip"; fi

conformance: $(STAMP)
	$(BIN)/tractile conformance --failures

bench: $(STAMP)
	$(BIN)/python bench/bench_onnx.py

clean:
	rm -rf $(VENV) build .pytest_cache
