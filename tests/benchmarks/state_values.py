"""The state's Parquet settings: each codec, with and without a dictionary for ``value``.

    python -m tests.benchmarks.state_values [--rows 50000 --value-bytes 1024 --repeat 3]

One JVM writes the same rows in the state's schema into a fresh Delta table, partitioned by
topic as segcompact creates it, for each kind of value, codec (Spark's
``spark.sql.parquet.compression.codec``) and dictionary setting of the ``value`` column (off: the
table property ``parquet.enable.dictionary#value`` = ``false``, which Delta hands its Parquet
writer). Kinds of value, ``--value-bytes`` each: ``random`` (high entropy, as compressed or
encrypted payloads), ``text`` (JSON-like words from a vocabulary of 500) and ``few`` (1,000
distinct values, repeated). The rows are made and cached in the JVM first; each write is timed
by the JVM's CPU seconds (``/proc``; the executors run in it, ``local`` master), best of
``--repeat``, the writes of one repeat in turn. Reported per write: CPU and wall seconds, the
bytes of its Parquet files and the encodings of the ``value`` column in the first one.
Nothing here asserts a time.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from segcompact.spark.session import get_spark
from segcompact.spark.tables import STATE_SCHEMA, session_settings
from tests.benchmarks import options

CODECS = ("snappy", "zstd", "lz4_raw", "none")
KINDS = ("random", "text", "few")
NO_DICTIONARY = ("parquet.enable.dictionary#value", "false")


def value(kind: str, size: int) -> Column:
    """A ``size``-byte value of ``kind`` for the row numbered ``id``."""
    if kind == "random":  # SHA-256 digests of (id, i): 32 bytes each
        digests = F.expr(
            f"concat_ws('', transform(sequence(1, {(size + 31) // 32}), "
            "i -> sha2(concat(cast(id AS string), ':', cast(i AS string)), 256)))"
        )
        return F.substring(F.unhex(digests), 1, size)
    if kind == "text":  # words of 3 to 9 letters, ids of a 500-word vocabulary
        words = F.expr(
            f"concat_ws(' ', transform(sequence(1, {size // 6}), "
            "i -> substring(sha2(cast(pmod(hash(id, i), 500) AS string), 256), 1, "
            "3 + pmod(hash(i), 7))))"
        )
        return F.substring(
            F.concat(F.lit('{"id":'), F.col("id").cast("string"), F.lit(',"text":"'), words),
            1,
            size,
        ).cast("binary")
    if kind == "few":  # 1,000 distinct values
        digest = F.sha2(F.pmod(F.col("id"), F.lit(1000)).cast("string"), 256)
        return F.substring(F.repeat(digest, size // 64 + 1), 1, size).cast("binary")
    raise ValueError(f"unknown kind of value {kind!r}: one of {', '.join(KINDS)}")


def rows(spark: SparkSession, kind: str, count: int, size: int) -> DataFrame:
    """``count`` rows in the state's schema, their values of ``kind``, cached."""
    ms = F.timestamp_millis(F.lit(1_700_000_000_000) + F.col("id"))
    columns = {
        "topic": F.lit("bench"),
        "partition": F.pmod(F.col("id"), F.lit(4)).cast("int"),
        "key": F.concat(F.lit("key-"), F.col("id").cast("string")).cast("binary"),
        "offset": F.col("id"),
        "timestamp": ms,
        "timestampType": F.lit(0),
        "value": value(kind, size),
        "headers": F.lit(None),
        "order_value": F.lit(None),
        "tombstone": F.lit(False),
        "delete_horizon": F.lit(None),
        "cleaned_at": ms,
    }
    out = spark.range(count, numPartitions=2).select(
        *[columns[f.name].cast(f.dataType).alias(f.name) for f in STATE_SCHEMA]
    )
    out.cache().count()
    return out


def jvm_cpu(spark: SparkSession) -> float:
    """The driver JVM's CPU seconds so far (with a ``local`` master, the executors' too)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    pid = jvm.java.lang.ProcessHandle.current().pid()
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write(spark: SparkSession, df: DataFrame, path: Path, codec: str, dictionary: bool) -> dict:
    """``df`` written into a new state table at ``path``: its figures."""
    builder = DeltaTable.create(spark).location(str(path)).addColumns(STATE_SCHEMA)
    builder = builder.partitionedBy("topic")
    if not dictionary:
        builder = builder.property(*NO_DICTIONARY)
    builder.execute()
    with session_settings(spark, {"spark.sql.parquet.compression.codec": codec}):
        cpu, wall = jvm_cpu(spark), time.monotonic()
        df.write.format("delta").mode("append").save(str(path))
        cpu, wall = jvm_cpu(spark) - cpu, time.monotonic() - wall
    files = sorted(path.rglob("*.parquet"))
    chunk = pq.ParquetFile(files[0]).metadata.row_group(0)
    (column,) = [
        chunk.column(i)
        for i in range(chunk.num_columns)
        if chunk.column(i).path_in_schema == "value"
    ]
    return {
        "cpu_s": cpu,
        "wall_s": wall,
        "bytes": sum(f.stat().st_size for f in files),
        "encodings": sorted(column.encodings),
        "compression": column.compression,
    }


def measure(
    spark: SparkSession,
    work: Path,
    *,
    count: int,
    size: int,
    repeat: int,
    kinds: Sequence[str],
    codecs: Sequence[str],
) -> dict[str, Any]:
    frames = {kind: rows(spark, kind, count, size) for kind in kinds}
    best: dict[str, Any] = {}
    n = 0
    try:
        for _ in range(repeat):
            for kind, df in frames.items():
                for codec in codecs:
                    for dictionary in (True, False):
                        n += 1
                        path = work / f"t{n}"
                        r = write(spark, df, path, codec, dictionary)
                        shutil.rmtree(path)
                        name = f"{kind} {codec} {'dictionary' if dictionary else 'plain'}"
                        if name not in best or r["cpu_s"] < best[name]["cpu_s"]:
                            best[name] = r
    finally:
        for df in frames.values():
            df.unpersist()
    return best


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = options.parser("state_values", __doc__)
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--value-bytes", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kind", action="append", choices=KINDS, help="default: all")
    parser.add_argument("--codec", action="append", choices=CODECS, help="default: all")
    options.add_workdir(parser, "state-values", "the tables written (removed after each)")
    args = parser.parse_args(argv)
    work: Path = args.workdir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    spark = get_spark(app_name="state-values", conf={"spark.driver.memory": "2g"})
    with tempfile.TemporaryDirectory(dir=work) as scratch:
        results = measure(
            spark,
            Path(scratch),
            count=args.rows,
            size=args.value_bytes,
            repeat=args.repeat,
            kinds=args.kind or KINDS,
            codecs=args.codec or CODECS,
        )
    print(f"{args.rows} rows, values of {args.value_bytes} bytes, best of {args.repeat}")
    for name, r in results.items():
        print(
            f"{name:28} {r['cpu_s']:6.2f} CPU s {r['wall_s']:6.2f} s wall "
            f"{r['bytes'] / 1e6:8.2f} MB  value: {r['compression']} {', '.join(r['encodings'])}"
        )
    options.write_json(args, results)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
