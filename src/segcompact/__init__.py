"""segcompact: a continuous compactor for Apache Kafka logs on Spark and Delta Lake."""

__version__ = "0.1.0"
