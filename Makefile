# kiln — the two commands a newcomer runs:
#   make demo   builds everything, trains a small GPT on a text file with `kiln train`
#               (about a minute on 2 cores), samples from it, and shows where its memory
#               went (docs/training.md)
#   make test   builds and runs the whole test suite (under CI=true: twice, the second
#               time with AddressSanitizer + UndefinedBehaviorSanitizer, then a short
#               smoke run of every fuzz target)
#   make check  the fast tier: builds and runs only the unit tests that call no C compiler
#               (no kernel built by the system compiler, no NVRTC), in about 2.5 seconds
#               on 2 cores once built (ctest -L fast): test_alloc, test_alloc_stress,
#               test_config, test_errors, test_fault, test_hashmap, test_passes, test_pool,
#               test_reference, test_safetensors, test_trace, test_trace_fault,
#               test_static_symbols, test_cxx_header, check_includes, check_comment_figures
#               and its self-test, and the cases that compile nothing of test_backend,
#               test_classes, test_codegen, test_devices, test_ir, test_picture and
#               test_registry (the others run as NAME_cc): KILN_FAST_TESTS in CMakeLists.txt
# A test that cannot run here (no GPU, no MPI, no Python package, ...) is skipped, not
# failed: ctest lists it as skipped and the reason it printed ("SKIP: ...") follows the run.
# Each installs what it lacks when run as root (apt-get), and otherwise prints the exact
# apt-get line to run. Other targets: install (PREFIX=...), demo-plan (the planner on a
# transformer block), mlp-train, cnn-train, test-asan, test-tsan, fuzz, fuzz-long, test-fuzz-smoke,
# bench, format, clean.

BUILD      ?= build
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX     ?= /usr/local
CMAKE_ARGS ?=
# Said every time, not only under CI: a cached -DKILN_WERROR=ON from a CI run must not stick
# in a later user build of the same folder.
ifeq ($(CI),true)
CMAKE_ARGS += -DKILN_WERROR=ON
else
CMAKE_ARGS += -DKILN_WERROR=OFF
endif

.PHONY: all deps build install demo demo-plan mlp-train cnn-train test test-normal check test-asan test-tsan fuzz \
	fuzz-long test-fuzz-smoke \
	bench format clean

all: build

deps:
	@sh scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# Headers, libkiln.so/.a, libkiln_gpt.a, the kiln tool, kiln.pc, kiln-static.pc,
# kiln-gpt.pc and the CMake package into PREFIX (make install PREFIX=$$HOME/.local):
# pkg-config --cflags --libs kiln (or kiln-static), or find_package(kiln). Builds only what
# it installs (the kiln_installed target), not the tests and benchmarks.
install: deps
	@cmake -S . -B $(BUILD) $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target kiln_installed
	@cmake --install $(BUILD) --prefix $(PREFIX)

# The demo's run: 2 layers, 4 heads, 128 channels, context 64, batch 16, 1000 steps, on
# DEMO_DATA (kiln's default: /usr/share/common-licenses/GPL-3, else a generated text).
# Kernels are cached in $(BUILD)/kcache, so a second run skips the compiler.
DEMO_OUT   ?= $(BUILD)/demo
DEMO_FLAGS ?= --layers 2 --heads 4 --channels 128 --context 64 --batch 16 --steps 1000 \
	--lr 3e-3 --warmup 30 --eval-every 100
DEMO_DATA  ?=

# Only the tool is built (the whole build with tests takes longer than the training).
# The build is quiet: its output goes to $(BUILD)/demo-build.log, shown only if it fails.
demo: deps
	@echo "building the kiln tool (output in $(BUILD)/demo-build.log) ..."
	@mkdir -p $(BUILD)
	@{ cmake -S . -B $(BUILD) $(CMAKE_ARGS) && cmake --build $(BUILD) -j $(JOBS) --target kiln_tool; } \
		>$(BUILD)/demo-build.log 2>&1 || { cat $(BUILD)/demo-build.log; echo "make demo: the build failed (above)"; exit 1; }
	@mkdir -p -m 700 $(BUILD)/kcache
	@KILN_CACHE_DIR=$(CURDIR)/$(BUILD)/kcache ./$(BUILD)/kiln train $(DEMO_FLAGS) --no-summary --overwrite \
		$(if $(DEMO_DATA),--data $(DEMO_DATA)) --out $(DEMO_OUT)
	@echo "---- sample (kiln sample $(DEMO_OUT)/model.safetensors) ----"
	@KILN_CACHE_DIR=$(CURDIR)/$(BUILD)/kcache ./$(BUILD)/kiln sample $(DEMO_OUT)/model.safetensors \
		--prompt "The GNU General Public License " --length 300 --temperature 0.7
	@echo "---- summary ----"
	@cat $(DEMO_OUT)/summary.txt
	@echo "pictures: $(DEMO_OUT)/loss.svg (loss curves), $(DEMO_OUT)/plan.svg (the step's memory plan)"

# The planner on a transformer block's forward pass and a training step (examples/demo.c).
demo-plan: build
	@./$(BUILD)/kiln_demo

# The training example: an MLP trained with AdamW, one compiled step (examples/mlp_train.c).
mlp-train: build
	@./$(BUILD)/kiln_mlp_train

# A CNN trained with AdamW (convolutions, max pooling), one compiled step (examples/cnn_train.c).
cnn-train: build
	@./$(BUILD)/kiln_cnn_train

test-normal: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Only what the fast tier runs is built (the kiln_fast_tests target), not the whole tree.
check: deps
	@cmake -S . -B $(BUILD) $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target kiln_fast_tests
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L fast

test-asan: deps
	@cmake -S . -B $(BUILD)-asan -DKILN_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD)-asan -j $(JOBS)
	@cd $(BUILD)-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		ctest --output-on-failure -j $(JOBS)

test-tsan: deps
	@cmake -S . -B $(BUILD)-tsan -DKILN_TSAN=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD)-tsan -j $(JOBS)
	@cd $(BUILD)-tsan && ctest --output-on-failure -L tsan

# ---- fuzzing (fuzz/, README "Fuzzing"): libFuzzer needs clang ----
FUZZ_BUILD   ?= $(BUILD)-fuzz
FUZZ_TARGETS  = builder config sidecar graph_text safetensors checkpoint import
FUZZ_SECONDS ?= 1800

fuzz:
	@sh scripts/deps.sh fuzz
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DKILN_FUZZ=ON -DKILN_BUILD_TESTS=OFF \
		-DKILN_BUILD_BENCH=OFF $(CMAKE_ARGS) >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) $(addprefix --target fuzz_,$(FUZZ_TARGETS))

# Each target for a fixed number of inputs over its seed corpus (ctest -L fuzz): seconds.
test-fuzz-smoke: fuzz
	@cd $(FUZZ_BUILD) && ctest --output-on-failure -j $(JOBS) -L fuzz

# Every target for FUZZ_SECONDS (all at once, one process each); new inputs collect in
# $(FUZZ_BUILD)/fuzz-corpus/<target>, crashes in $(FUZZ_BUILD)/fuzz-findings/, the
# figures (executions, cov, ft) at the end of $(FUZZ_BUILD)/fuzz-long-<target>.log.
fuzz-long: fuzz
	@mkdir -p $(FUZZ_BUILD)/fuzz-findings
	@pids=; for t in $(FUZZ_TARGETS); do \
		dict=; [ -f fuzz/$$t.dict ] && dict=-dict=fuzz/$$t.dict; \
		mkdir -p $(FUZZ_BUILD)/fuzz-corpus/$$t; \
		echo "fuzz_$$t: $(FUZZ_SECONDS) s, log in $(FUZZ_BUILD)/fuzz-long-$$t.log"; \
		$(FUZZ_BUILD)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $$dict \
			-artifact_prefix=$(FUZZ_BUILD)/fuzz-findings/$$t- \
			$(FUZZ_BUILD)/fuzz-corpus/$$t fuzz/corpus/$$t >$(FUZZ_BUILD)/fuzz-long-$$t.log 2>&1 & \
		pids="$$pids $$!"; \
	done; fail=0; for p in $$pids; do wait $$p || fail=1; done; \
	grep -h "stat::number_of_executed_units" $(FUZZ_BUILD)/fuzz-long-*.log; exit $$fail

ifeq ($(CI),true)
test: test-normal test-asan test-fuzz-smoke
else
test: test-normal
endif

# Benchmarks print figures and never fail on time (bench/RESULTS.md records them).
bench: build
	@sh bench/alloc/run.sh $(BUILD)

format:
	@clang-format -i $$(git ls-files '*.c' '*.h' '*.cpp')

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(FUZZ_BUILD)
