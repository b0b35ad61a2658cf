"""segcompact on a Spark standalone cluster: a master and two single-core workers, each its own
JVM, on 127.0.0.1."""
