"""The words of the SLA report for a reader who is not an engineer: each stage's plain name, a
glossary of every term the report uses, and the copies of data the job does not own. Pure text.
"""

from __future__ import annotations

# Each stage of an erasure (schedule.STAGES, in its order) as the report names it.
STAGE_WORDS = {
    "seen": "noticed",
    "merged": "dropped from the current data",
    "purged": "purged from the table's files",
    "materialized": "copy for Kafka rewritten",
    "versions_removed": "old copies for Kafka deleted",
    "vacuumed": "old table files deleted",
}

# Status as the report says it: "breached" is the ledger's word for a missed deadline.
STATUS_WORDS = {"met": "met", "pending": "pending", "breached": "missed"}

GLOSSARY: tuple[tuple[str, str], ...] = (
    ("Topic, partition, offset",
     "Kafka keeps records in named topics, each split into numbered partitions; a record's "
     "offset is its position in its partition."),
    ("Key",
     "What a record is about, for example a customer number. Erasure is about every older "
     "value recorded for one key."),
    ("Deletion (tombstone)",
     "A record that says a key's data is to be deleted. Kafka calls it a tombstone."),
    ("Overwrite",
     "A newer value for a key that replaces the older one. The older value must be erased by "
     "the same deadline as a deletion."),
    ("Erasure",
     "The older values of a key are physically gone from every file this job keeps, not only "
     "hidden from readers."),
    ("Deadline (SLA)",
     "The time allowed from a deletion or overwrite to its complete erasure, set per topic "
     "(gdpr.deletion.sla.ms)."),
    ("Time to erasure",
     "From the deletion or overwrite to the last step of its erasure. Median: half of them "
     "took less; 99th percentile: 99 in 100 took less."),
    ("Met, pending, missed",
     "Met: erased by the deadline. Pending: not yet erased, the deadline not yet reached. "
     "Missed (the ledger says breached): a step was done late, or is still not done after the "
     "deadline."),
    ("Erasure round (overwrite round)",
     "One pass that erases every value due in a partition at once. Replaced values are recorded "
     "per round, not per key: a round stands for every value it erased."),
    ("Steps of an erasure",
     "Noticed: the job read the deletion. Dropped from the current data: the key's old value is "
     "no longer in the table readers see. Purged from the table's files: rows marked deleted are "
     "rewritten out of the files. Copy for Kafka rewritten: the job's output for Kafka is "
     "written again without the value. Old copies for Kafka deleted: earlier versions of that "
     "output are removed and checked gone. Old table files deleted: see vacuum."),
    ("Vacuum",
     "The Delta Lake command that deletes the table files no longer in use, once they are older "
     "than the table's retention. Until then a deleted value still sits in an old file."),
    ("Tombstone horizon",
     "How long the deletion record itself is kept (delete.retention.ms), so that every reader "
     "learns of the deletion. After it the key itself is erased the same way."),
    ("Ledger",
     "The job's record of every deletion and round with the time of each step: the evidence "
     "behind this report."),
    ("Key hash",
     "Keys appear only as a keyed hash (HMAC-SHA-256) under a secret; without the secret a hash "
     "cannot be tied to a key, so destroying the secret makes the ledger anonymous."),
    ("Delta table",
     "The job's tables are Delta Lake tables: data files plus a log of changes."),
    ("Not owned (upstream)",
     "Copies of the data that this job reads or that exist around it but that it does not "
     "manage, so it cannot erase them; their owners must."),
)  # fmt: skip

# Copies of the data that exist outside what segcompact writes, whatever the configuration.
NOT_OWNED: tuple[tuple[str, str], ...] = (
    ("Kafka's source segments",
     "The log files this job reads are Kafka's: Kafka's own retention and compaction, or whoever "
     "copied them, erase them."),
    ("Object-store versions and snapshots",
     "Versioning, snapshots or backups of the locations this job writes keep deleted files "
     "unless their own policies remove them."),
    ("Disk caches",
     "A cluster's disk cache of the tables' files (for example a Databricks disk cache)."),
    ("Spark's shuffle files",
     "Temporary files in spark.local.dir, removed by Spark's context cleaner, not by this job."),
)  # fmt: skip
