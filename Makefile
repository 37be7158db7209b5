# ggscope: `make run` builds and opens ggscope, `make test` builds and runs every test.
BUILD     ?= build
BUILD_SAN ?= build-san
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
ARGS      ?=
FUZZ_SECONDS ?= 60

.PHONY: all run test test-fast test-san fuzz bench deps clean

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

test-fast: all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# libFuzzer target for the GGUF reader (needs clang).
fuzz:
	@tools/deps.sh --test
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DGGSCOPE_FUZZ=ON >/dev/null
	cmake --build build-fuzz -j $(JOBS) --target fuzz_gguf
	mkdir -p build-fuzz/corpus
	./build-fuzz/fuzz_gguf -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -rss_limit_mb=2048 build-fuzz/corpus fuzz/seeds

bench: all
	@ls $(BUILD)/bench_* 2>/dev/null

clean:
	rm -rf $(BUILD) $(BUILD_SAN) build-fuzz
