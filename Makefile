# kiln — the two commands a newcomer runs:
#   make demo   builds everything and runs the main example
#   make test   builds and runs the whole test suite (under CI=true: twice, the second
#               time with AddressSanitizer + UndefinedBehaviorSanitizer, then a short
#               smoke run of every fuzz target)
# Each installs what it lacks when run as root (apt-get), and otherwise prints the exact
# apt-get line to run. Other targets: test-asan, test-tsan, fuzz, fuzz-long,
# test-fuzz-smoke, bench, format, clean.

BUILD      ?= build
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
ifeq ($(CI),true)
CMAKE_ARGS += -DKILN_WERROR=ON
endif

.PHONY: all deps build demo mlp-train test test-normal test-asan test-tsan fuzz fuzz-long test-fuzz-smoke \
	bench format clean

all: build

deps:
	@sh scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@./$(BUILD)/kiln_demo

# The training example: an MLP trained with AdamW, one compiled step (examples/mlp_train.c).
mlp-train: build
	@./$(BUILD)/kiln_mlp_train

test-normal: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

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
FUZZ_TARGETS  = builder config sidecar safetensors
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
