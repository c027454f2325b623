# Front door.  `make` builds everything into build/ (programs in build/bin); `make test` installs
# missing Debian packages when run as root, builds and runs the whole suite through ctest;
# `make test-sanitize` runs the same suite under ASan+UBSan; `make demo` writes and checks a
# sample artifact.
BUILD      ?= build
BUILD_SAN  ?= build-sanitize
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

DEB_PACKAGES := cmake make gcc pkg-config libyaml-dev libjansson-dev libzstd-dev libxxhash-dev \
                libcriterion-dev python3 zstd

.PHONY: all build deps test test-sanitize demo install clean conformance

all: build

deps:
	@bash scripts/deps.sh $(DEB_PACKAGES)

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: deps
	$(MAKE) build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-sanitize: deps
	@test -f $(BUILD_SAN)/CMakeCache.txt || cmake -S . -B $(BUILD_SAN) -DCMAKE_BUILD_TYPE=Debug -DNINFER_SANITIZE=ON $(CMAKE_ARGS)
	cmake --build $(BUILD_SAN) -j $(JOBS)
	cd $(BUILD_SAN) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure -j $(JOBS)

demo: deps
	$(MAKE) build
	@bash scripts/demo.sh $(BUILD)/bin

install: build
	cmake --install $(BUILD)

# The independent acceptance suite beside this checkout (not part of `make test`).
conformance: build
	python3 ../shared/conformance/run.py --bin $(BUILD)/bin --only read.verify,read.inspect,read.split.verify,read.split.inspect,reject,cli.verify,cli.inspect

clean:
	rm -rf $(BUILD) $(BUILD_SAN)
