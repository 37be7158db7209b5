# ggscope: `make run` builds and opens ggscope, `make test` builds and runs every test.
BUILD     ?= build
BUILD_SAN ?= build-san
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
ARGS      ?=
FUZZ_SECONDS ?= 60

.PHONY: all run test test-noshared test-fast test-san fuzz bench deps clean

all: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

deps:
	@tools/deps.sh

run: all
	./$(BUILD)/ggscope $(ARGS)

# Every test: the normal build, then the same tests under ASan + UBSan.
test:
	@tools/deps.sh --test
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	cmake -S . -B $(BUILD_SAN) -DCMAKE_BUILD_TYPE=Debug -DGGSCOPE_SANITIZE=ON >/dev/null
	cmake --build $(BUILD_SAN) -j $(JOBS)
	cd $(BUILD_SAN) && ctest --output-on-failure -j $(JOBS) -LE nosan

# The Release suite once more as a user's clone sees it: the fixture path points
# at an empty folder, so a test that silently needs ../shared fails here.
test-noshared: all
	@empty=$$(mktemp -d) && cmake -S . -B $(BUILD) -DGGSCOPE_SHARED_DIR=$$empty >/dev/null && \
	  (cd $(BUILD) && ctest --output-on-failure -j $(JOBS)); rc=$$?; \
	  cmake -S . -B $(BUILD) -UGGSCOPE_SHARED_DIR >/dev/null; rmdir $$empty; exit $$rc

test-fast: all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Every libFuzzer target (fuzz/fuzz_*.c, needs clang), each for a share of FUZZ_SECONDS.
fuzz:
	@tools/deps.sh --test
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DGGSCOPE_FUZZ=ON >/dev/null
	cmake --build build-fuzz -j $(JOBS) --target fuzz_all
	tools/fuzz.sh $(FUZZ_SECONDS)

bench: all
	@ls $(BUILD)/bench_* 2>/dev/null

clean:
	rm -rf $(BUILD) $(BUILD_SAN) build-fuzz
