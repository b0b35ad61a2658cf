# `make demo` and `make test` set everything up on a fresh clone: a virtual env with the pinned
# packages, Delta Lake's jars (and Kafka's, for tests) from Maven Central in .jars/, and a check
# that Java 17+ is there.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DELTA_JARS := .jars/delta/.done
KAFKA_JARS := .jars/kafka/.done
PYTEST_ARGS ?=

export PYSPARK_PYTHON := $(abspath $(BIN)/python)
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN)/python)

.PHONY: setup demo test lint bench golden clean java

setup: java $(BIN)/.installed $(DELTA_JARS)

java:
	@command -v java >/dev/null || { echo "error: java not found; segcompact needs Java 17+ (Spark 4)" >&2; exit 2; }
	@v=$$(java -XshowSettings:properties -version 2>&1 | sed -n 's/ *java.specification.version = //p'); \
	  [ "$${v%%.*}" -ge 17 ] 2>/dev/null || { echo "error: Java $$v found; segcompact needs Java 17+ (Spark 4)" >&2; exit 2; }

$(BIN)/.installed: pyproject.toml setup.py $(wildcard src/segcompact/format/*.c)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip setuptools wheel
	$(BIN)/pip install -q -e '.[spark,test]'
	touch $@

$(DELTA_JARS): jvm/delta/pom.xml
	rm -rf .jars/delta
	mvn -q -B -f jvm/delta/pom.xml dependency:copy-dependencies \
	  -DoutputDirectory=$(abspath .jars/delta) -DincludeScope=runtime
	touch $@

$(KAFKA_JARS): jvm/kafka/pom.xml
	rm -rf .jars/kafka
	mvn -q -B -f jvm/kafka/pom.xml dependency:copy-dependencies \
	  -DoutputDirectory=$(abspath .jars/kafka) -DincludeScope=runtime
	touch $@

demo: setup
	$(BIN)/segcompact demo

test: setup $(KAFKA_JARS)
	$(BIN)/ruff check src tests streaming
	$(BIN)/mypy
	$(BIN)/pytest $(PYTEST_ARGS)

bench: setup
	$(BIN)/python -m tests.benchmarks.decode --size-mib 256

golden: setup $(KAFKA_JARS)
	$(BIN)/python -m tests.golden.make_golden

clean:
	rm -rf $(VENV) .jars build src/*.egg-info src/segcompact/format/*.so
