# `make demo` and `make test` set everything up on a fresh clone: a virtual env with the pinned
# packages, Delta Lake's jars (and Kafka's, for tests) from Maven Central in .jars/, and a check
# that Java 17+ is there.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DELTA_JARS := .jars/delta/.done
KAFKA_JARS := .jars/kafka/.done
S3_JARS := .jars/s3/.done
# MinIO, the S3 server of the object-store tests, built from the Go module proxy (a few
# minutes, once) into .tools/. A pseudo-version: MinIO's module has no semver tags.
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
MINIO := .tools/bin/minio
PYTEST_ARGS ?=
# The suite runs on this many processes (pytest-xdist), a test file each at a time: a file's
# tests share its fixtures. Each process starts its own Spark session when a test asks for one.
# Files are handed out in collection order, the slowest directories' first
# (tests/support/suite_order.py), so that the run ends on short unit-test files.
TEST_WORKERS ?= 2

export PYSPARK_PYTHON := $(abspath $(BIN)/python)
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN)/python)

.PHONY: setup demo test chaos fuzz fuzzers bench bench-readonly bench-reduce bench-state-values bench-encode bench-e2e bench-cleaner bench-steps bench-fixed-cost bench-steady bench-latency bench-memory bench-partitions bench-skew bench-scaling bench-ship soak golden clean java chromium minio crds bundle-schema

setup: java $(BIN)/.installed $(DELTA_JARS) $(S3_JARS)

java:
	@command -v java >/dev/null || { echo "error: java not found; segcompact needs Java 17+ (Spark 4)" >&2; exit 2; }
	@v=$$(java -XshowSettings:properties -version 2>&1 | sed -n 's/ *java.specification.version = //p'); \
	  [ "$${v%%.*}" -ge 17 ] 2>/dev/null || { echo "error: Java $$v found; segcompact needs Java 17+ (Spark 4)" >&2; exit 2; }

$(BIN)/.installed: pyproject.toml setup.py $(wildcard src/segcompact/*/*.c)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip setuptools wheel
	$(BIN)/pip install -q -e '.[spark,s3,test]'
	touch $@

$(DELTA_JARS): jvm/delta/pom.xml
	rm -rf .jars/delta
	mvn -q -B -f jvm/delta/pom.xml dependency:copy-dependencies \
	  -DoutputDirectory=$(abspath .jars/delta) -DincludeScope=runtime
	touch $@

$(S3_JARS): jvm/s3/pom.xml
	rm -rf .jars/s3
	mvn -q -B -f jvm/s3/pom.xml dependency:copy-dependencies \
	  -DoutputDirectory=$(abspath .jars/s3) -DincludeScope=runtime
	touch $@

minio: $(MINIO)

$(MINIO):
	@command -v go >/dev/null || { echo "error: go not found; the S3 tests build MinIO with it" >&2; exit 2; }
	GOBIN=$(abspath .tools/bin) GOFLAGS=-trimpath go install github.com/minio/minio@$(MINIO_VERSION)

# The Spark operator's CRD, which the Kubernetes manifest is checked against (Go module proxy).
crds: $(BIN)/.installed
	$(BIN)/python -m tests.support.crds

# The Asset Bundle's JSON schema (Databricks CLI source): the Go module proxy refuses that
# module here, so `make bundle-schema BUNDLE_SCHEMA=path/to/jsonschema.json` caches a copy; the
# bundle's schema test skips, saying why, where none is cached.
bundle-schema: $(BIN)/.installed
	$(BIN)/python -m tests.support.bundle_schema $(if $(BUNDLE_SCHEMA),--from $(BUNDLE_SCHEMA))

$(KAFKA_JARS): jvm/kafka/pom.xml
	rm -rf .jars/kafka
	mvn -q -B -f jvm/kafka/pom.xml dependency:copy-dependencies \
	  -DoutputDirectory=$(abspath .jars/kafka) -DincludeScope=runtime
	touch $@

# The demo's config gives one topic a deletion SLA, whose ledger needs a secret: the demo
# writes a random one into data/ledger.secret (the file conf/compactor.toml names) if missing.
demo: setup
	$(BIN)/segcompact demo

# The SLA page's test opens it in a real headless browser. Debian's chromium, not Playwright's
# own download: that fetches a browser build from outside the package registries.
chromium:
	@command -v chromium >/dev/null || { \
	  sudo=; [ "$$(id -u)" -eq 0 ] || ! command -v sudo >/dev/null || sudo=sudo; \
	  $$sudo apt-get update -qq && $$sudo apt-get install -y -qq chromium; }

# The C decoder's libFuzzer harness under AddressSanitizer and UndefinedBehaviorSanitizer:
# clang and its fuzzer runtime from Debian's packages when missing.
CLANG := clang-14
FUZZ_DIR := .tools/fuzz
DECODE_FUZZER := $(FUZZ_DIR)/decode_fuzzer
PY_INCLUDE = $(shell $(BIN)/python -c "import sysconfig; print(sysconfig.get_paths()['include'])")
PY_LIBDIR = $(shell $(BIN)/python -c "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))")

fuzzers: $(DECODE_FUZZER)

$(DECODE_FUZZER): tests/fuzz/decode_fuzzer.c src/segcompact/format/_crecords.c $(BIN)/.installed
	@command -v $(CLANG) >/dev/null && [ -n "$$(find /usr/lib/llvm-14 -name 'libclang_rt.fuzzer-x86_64.a' 2>/dev/null)" ] || { \
	  sudo=; [ "$$(id -u)" -eq 0 ] || ! command -v sudo >/dev/null || sudo=sudo; \
	  $$sudo apt-get update -qq && $$sudo apt-get install -y -qq $(CLANG) libclang-rt-14-dev; }
	mkdir -p $(FUZZ_DIR)
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  -I$(PY_INCLUDE) tests/fuzz/decode_fuzzer.c -o $@ \
	  -L$(PY_LIBDIR) -lpython3.11 -Wl,-rpath,$(PY_LIBDIR)

# 10 M inputs through the C decoder (ASan + UBSan, no single allocation over 256 MiB) and 1 M
# segment files through the reader and both decoders (atheris), from the seeds and the corpus
# kept in .tools/fuzz; a crash leaves its input in .tools/fuzz/crash-* (make it a file of
# tests/fuzz/crashers/, which make test replays). FUZZ_RUNS and SEGMENT_FUZZ_RUNS scale them.
FUZZ_RUNS ?= 10000000
SEGMENT_FUZZ_RUNS ?= 1000000
fuzz: $(DECODE_FUZZER)
	$(BIN)/python -m tests.fuzz.seeds records $(FUZZ_DIR)/seeds
	$(BIN)/python -m tests.fuzz.seeds segments $(FUZZ_DIR)/segment-seeds
	mkdir -p $(FUZZ_DIR)/corpus $(FUZZ_DIR)/segment-corpus
	$(DECODE_FUZZER) -runs=$(FUZZ_RUNS) -max_len=65536 -rss_limit_mb=2048 -malloc_limit_mb=256 \
	  -artifact_prefix=$(FUZZ_DIR)/ -print_final_stats=1 $(FUZZ_DIR)/corpus $(FUZZ_DIR)/seeds
	$(BIN)/python -m tests.fuzz.segment_fuzzer -runs=$(SEGMENT_FUZZ_RUNS) -max_len=65536 \
	  -rss_limit_mb=2048 -artifact_prefix=$(FUZZ_DIR)/ -print_final_stats=1 \
	  $(FUZZ_DIR)/segment-corpus $(FUZZ_DIR)/segment-seeds

# kill -9 of each step of a job's life at seeded random moments, then the tables and the output
# compared with an uninterrupted run (tests/chaos/harness.py): on the local file system, then
# with the tables, checkpoint and output on a MinIO server. A round of the steps makes about 20
# kill points in about 30 minutes here; rounds on new logs follow until the number is reached.
CHAOS_KILLS ?= 50
CHAOS_S3_KILLS ?= 20
CHAOS_SEED ?= 20261125
chaos: setup $(MINIO)
	$(BIN)/python -m tests.chaos.harness --kills $(CHAOS_KILLS) --seed $(CHAOS_SEED)
	$(BIN)/python -m tests.chaos.harness --s3 --kills $(CHAOS_S3_KILLS) --seed $(CHAOS_SEED) \
	  --work .tools/chaos-s3

test: setup chromium $(KAFKA_JARS) $(MINIO) crds fuzzers
	$(BIN)/ruff check src tests streaming
	$(BIN)/mypy
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=10 \
	  $(PYTEST_ARGS)

bench: setup
	$(BIN)/python -m tests.benchmarks.decode --size-mib 256

# Reducing a 128 MiB lz4 log in its decoding task: in one pass beside keys first.
bench-reduce: setup
	$(BIN)/python -m tests.benchmarks.reduce --size-mib 128

# Encoding records into v2 batches, beside kafka-python's builder and the lz4 + CRC floor.
bench-encode: setup
	$(BIN)/python -m tests.benchmarks.encode --size-mib 64

# 1 GiB through `run --once` beside the plain pattern (binaryFile + kafka-python + one MERGE).
bench-e2e: setup
	$(BIN)/python -m tests.benchmarks.e2e

# Kafka's own log cleaner (a real broker, one cleaner thread) beside `segcompact run --once`, on
# the same broker-written log: MB per CPU second of each, and a check that both kept the same.
bench-cleaner: setup $(KAFKA_JARS)
	$(BIN)/python -m tests.benchmarks.cleaner --size-mib 256 --partitions 2 \
	  --keys-per-partition 200000 --tombstones 0.1

# Where one `run --once` of bench-cleaner's log spends its CPU, step by step (JVM start, decode,
# reduce, merge, commit, encode, write...), from /proc, the job's debug log and the JVM's Flight
# Recorder; run `make bench-cleaner` first (its log is the input). STEPS_CODE='--code a=SRC ...'
# puts checkouts side by side.
bench-steps: setup
	$(BIN)/python -m tests.benchmarks.steps --repeat 3 $(STEPS_CODE)

# What segcompact spends with nothing to compact: run --once on an empty source (fresh tables,
# then a restart) and two minutes of the idle continuous job (CPU from /proc: a quiet machine).
bench-fixed-cost: setup
	$(BIN)/python -m tests.benchmarks.fixed_cost --idle-s 120

# One-segment micro-batches on a state of 1 M and of 10 M keys, per table layout (segcompact's
# deletion vectors, files rewritten, liquid clustering): per-batch time and Delta's MERGE metrics.
bench-steady: setup
	$(BIN)/python -m tests.benchmarks.steady

# The continuous job as users run it: seconds from a segment's roll to its commit, p50 and p99.
bench-latency: setup
	$(BIN)/python -m tests.benchmarks.latency

# segcompact ship to MinIO (checked, multipart completed last, manifest) beside s3fs put_file
# of the same 512 MiB of segments, 4 at once: MB/s of each and the ratio; then idle polls of
# 200 shipped partitions: CPU (from /proc) a partition a poll, beside the poll interval, and
# the idle command's share of a core over a minute.
bench-ship: setup minio
	$(BIN)/python -m tests.benchmarks.ship --partitions 4 --segments 2 --segment-mib 64

# status and sla on the demo's tables by delta-rs, beside the same commands reading through Spark.
bench-readonly: setup
	$(BIN)/python -m tests.benchmarks.readonly --repeat 5

# The state's Parquet writes: each codec, with and without a dictionary for `value`, on random,
# text-like and repeated values (50 MB each): the JVM's CPU seconds and the bytes written.
bench-state-values: setup
	$(BIN)/python -m tests.benchmarks.state_values --rows 50000 --value-bytes 1024 --repeat 3

# One 1 GiB segment through run --once: the peak RSS of the driver, the JVM and each Python worker.
bench-memory: setup
	$(BIN)/python -m tests.benchmarks.memory

# One topic of 16 to 16,384 small partitions (segcompact's encoder writes them): run --once, a
# steady pass, materialize, status, purge, an idle run, per partition and beside the same bytes
# in 2 partitions; Kafka's cleaner (a real broker) beside the sizes up to 1,024. Hours at 16,384.
bench-partitions: setup $(KAFKA_JARS)
	$(BIN)/python -m tests.benchmarks.partitions --partitions 16 --partitions 1024 \
	  --partitions 4096 --partitions 16384 --cleaner-up-to 1024

# Bad input at scale: a partition of 100,000 segments beside 16 others, and one of 600,000
# records beside 4,000 tiny ones; one run --once each, every partition checked, and the others
# alone beside it.
bench-skew: setup
	$(BIN)/python -m tests.benchmarks.skew

# One log through run --once on a Spark standalone cluster of one, then two, single-core executors:
# 3 M keys written once, then 3 M updates among them (470 MB), so that the executors' work, not
# the driver's fixed cost, is most of the run.
bench-scaling: setup
	$(BIN)/python -m tests.benchmarks.scaling --size-mib 256 --partitions 8 --keys 3000000

# No test can wait out a deletion SLA on the real clock: this soaks the continuous job against it.
soak: setup
	$(BIN)/python -m tests.benchmarks.soak_sla --minutes 5 --sla-ms 60000

golden: setup $(KAFKA_JARS)
	$(BIN)/python -m tests.golden.make_golden

clean:
	rm -rf $(VENV) .jars .tools build src/*.egg-info src/segcompact/format/*.so
