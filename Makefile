# StreamRelay — the two commands that matter: `make demo` and `make test`.
SWIFT ?= swift
# Extra flags for `swift test` (CI passes --xunit-output …; e.g. --filter ClassName).
SWIFT_TEST_FLAGS ?=

.PHONY: deps build release demo test check bench fuzz fuzz-smoke validate-deploy clean

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# A real stream through a real Redis and two relay instances, dropped and resumed.
demo: deps
	$(SWIFT) build
	@scripts/demo.sh

# Unit and integration tests (a real redis-server on a temp Unix socket, real nginx).
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build $(SWIFT_TEST_FLAGS)

# The edit loop: the pure and in-process tests only (no redis-server, no relay process, no
# browser), in well under a minute once built. `make test` runs everything.
check:
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --skip RelayIntegrationTests $(SWIFT_TEST_FLAGS)

# StreamRelay vs nginx + nchan on one Redis; writes docs/BENCHMARKS.md (< 25 min on 2 cores).
bench: deps
	@scripts/bench.sh

# libFuzzer targets of the pure parsers, 60 s each (docs/FUZZING.md); fuzz-smoke: 6 s each (CI).
# Then the HTTP-level fuzzer against a running relay for 120 s (it runs 12 s in `make test`).
fuzz:
	@scripts/fuzz.sh --seconds 60
	$(SWIFT) build --build-tests
	RELAY_HTTP_FUZZ_SECONDS=120 RELAY_HTTP_FUZZ_REQUESTS=100000000 $(SWIFT) test --skip-build --filter HTTPFuzzTests

fuzz-smoke:
	@scripts/fuzz.sh --seconds 6

clean:
	rm -rf .build
