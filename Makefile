# kiln — the two commands a newcomer runs:
#   make demo   builds everything and runs the main example
#   make test   builds and runs the whole test suite (under CI=true: twice, the second
#               time with AddressSanitizer + UndefinedBehaviorSanitizer)
# Each installs what it lacks when run as root (apt-get), and otherwise prints the exact
# apt-get line to run. Other targets: test-asan, test-tsan, bench, format, clean.

BUILD      ?= build
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
ifeq ($(CI),true)
CMAKE_ARGS += -DKILN_WERROR=ON
endif

.PHONY: all deps build demo test test-normal test-asan test-tsan bench format clean

all: build

deps:
	@sh scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@./$(BUILD)/kiln_demo

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

ifeq ($(CI),true)
test: test-normal test-asan
else
test: test-normal
endif

# Benchmarks print figures and never fail on time (bench/RESULTS.md records them).
bench: build
	@sh bench/alloc/run.sh $(BUILD)

format:
	@clang-format -i $$(git ls-files '*.c' '*.h' '*.cpp')

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan
