# tractile: two commands set up everything.
#   make demo   creates .venv, installs tractile with what the demo needs (NumPy, onnx, rich), runs the demo
#   make test   creates .venv, installs tractile with its test oracles and tool chains, runs the whole test suite
# Every install is pinned by constraints.txt: upgrading an oracle is a reviewed edit of that file.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt
JOBS ?= 2

.PHONY: demo test lint versions conformance bench clean browser toolchains fuzz

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.demo: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP) -e '.[onnx,cli]'
	touch $@

$(VENV)/.test: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP) -e '.[all,test]'
	touch $@

demo: $(VENV)/.demo
	$(BIN)/python examples/make_demo_model.py build/demo.onnx
	$(BIN)/tractile dump build/demo.onnx -i N,1,28,28,f32
	$(BIN)/tractile run build/demo.onnx -i 1,1,28,28,f32

test: $(VENV)/.test lint browser toolchains versions
	$(BIN)/python -m pytest -n $(JOBS) tests

# ruff (rules in pyproject.toml) on everything, mypy on the core packages; make test runs it first
lint: $(VENV)/.test
	$(BIN)/ruff check src tests bench examples
	$(BIN)/mypy

# the versions of every oracle and tool chain the tests use: a red run says which one changed
versions: $(VENV)/.test
	@$(BIN)/python tests/oracle_versions.py

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

# the compiler's tests build with gcc and clang, and run firmware in QEMU (Cortex-M) and simavr (AVR)
TOOLCHAIN_PACKAGES := clang gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm gcc-avr avr-libc simavr \
  gcc-aarch64-linux-gnu qemu-user gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf qemu-system-misc
toolchains:
	@missing=""; for tool in clang arm-none-eabi-gcc qemu-system-arm avr-gcc simavr aarch64-linux-gnu-gcc qemu-aarch64 riscv64-unknown-elf-gcc qemu-system-riscv32; do \
	  command -v $$tool >/dev/null 2>&1 || missing="$$missing $$tool"; done; \
	if [ -z "$$missing" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing the compiler tests' tool chains ($$missing)"; \
	  { DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(TOOLCHAIN_PACKAGES); } \
	    >/dev/null 2>&1 </dev/null || echo "could not install$$missing: the tests that need them will skip"; \
	else echo "missing$$missing and apt-get is not usable: the tests that need them will skip"; fi

conformance: $(VENV)/.test
	$(BIN)/tractile conformance --failures

$(VENV)/.bench: pyproject.toml constraints.txt $(VENV)/.test
	$(PIP) -e '.[all,test,bench]'
	touch $@

bench: $(VENV)/.bench
	$(BIN)/python bench/bench_onnx.py

clean:
	rm -rf $(VENV) build .pytest_cache

# coverage-guided fuzzing (outside CI): atheris over the TFLite reader, the ONNX loader and the
# analyser, FUZZ_SECONDS each, seeded from the shared models and the structural fuzzer's cases;
# findings land in build/fuzz/TARGET (see docs/ROBUSTNESS.md)
FUZZ_SECONDS ?= 60
fuzz: $(VENV)/.test
	$(PIP) atheris
	@for target in tflite onnx analyse; do \
	  mkdir -p build/fuzz/$$target/corpus; \
	  $(BIN)/python -c "from pathlib import Path; from tractile.tools.fuzz_atheris import seeds; \
	    seeds('$$target', Path('build/fuzz/$$target/corpus'), Path('../shared/models'))"; \
	  echo "fuzzing $$target for $(FUZZ_SECONDS) s"; \
	  (cd build/fuzz/$$target && ../../../$(BIN)/python -m tractile.tools.fuzz_atheris $$target \
	     -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=4096 -timeout=10 corpus) || exit 1; \
	done
