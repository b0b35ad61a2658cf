#!/usr/bin/env bash
# spark-submit of segcompact's streaming job (streaming/segcompact_job.py) to YARN or Kubernetes.
#
#   deploy/spark-submit/submit.sh yarn CONFIG [--once]
#   deploy/spark-submit/submit.sh k8s  CONFIG [--once]
#   deploy/spark-submit/submit.sh local CONFIG [--once]   # the same command on local[*]
#
# CONFIG is a compactor.toml (conf/compactor.toml documents every key); --once processes what
# is there and exits, without it the job runs until stopped. Anything in SPARK_SUBMIT_ARGS is
# added to spark-submit's own options (resources, queue, --conf spark.hadoop.* ...).
#
# Environment
#   SPARK_HOME            Spark 4.2.x for Scala 2.13 (the pins: pyspark==4.2.0 and
#                         delta-spark==4.4.0 in pyproject.toml, io.delta:delta-spark_4.2_2.13:4.4.0
#                         in jvm/delta/pom.xml). Default: the spark-submit on PATH.
#   SEGCOMPACT_PYENV      yarn: a packed Python environment (tar.gz) holding the segcompact wheel
#                         and its dependencies, shipped with --archives; see "Python" below.
#   SEGCOMPACT_IMAGE      k8s: the container image (deploy/kubernetes/Dockerfile).
#   K8S_MASTER            k8s: the API server, e.g. k8s://https://kubernetes.default.svc:443.
#   K8S_NAMESPACE, K8S_SERVICE_ACCOUNT   k8s: where the driver runs and who creates executors.
#   K8S_PVC               k8s: a ReadWriteMany claim mounted at /segcompact on the driver and the
#                         executors (segments, checkpoint, config; see "Storage").
#   SEGCOMPACT_DELTA      packages (default for yarn, local): --packages
#                         io.delta:delta-spark_4.2_2.13:4.4.0, resolved from Maven Central by the
#                         submitting machine; none (default for k8s): the jars are already on
#                         Spark's classpath (deploy/kubernetes/Dockerfile copies them into the
#                         image). packages on k8s also needs spark.kubernetes.file.upload.path,
#                         through which cluster mode ships the resolved jars to the pods.
#
# Python. Executors import segcompact too (the kafka-segments source decodes segments in Python
# workers), and it needs compiled packages (pyarrow, lz4, zstandard, cramjam, crc32c, xxhash), so
# `--py-files segcompact.whl` alone is not enough: PySpark puts only .zip/.egg/.jar py-files on
# the executors' sys.path, and compiled dependencies cannot travel that way. Ship a whole
# environment instead, built on the same OS/architecture as the cluster nodes, e.g.
#
#   python3.11 -m venv /opt/segcompact-env
#   /opt/segcompact-env/bin/pip install dist/segcompact-*.whl venv-pack  # `pip wheel --no-deps -w dist .`
#   /opt/segcompact-env/bin/venv-pack -p /opt/segcompact-env -o segcompact-env.tar.gz
#
# venv-pack does not carry the interpreter: every node needs the same Python 3.11+ at the same
# path (conda-pack carries it). The environment's pyspark is the 4.2.0 wheel; keep the
# cluster's Spark at 4.2.x. On Kubernetes the image is the environment.
#
# Storage. Delta tables ([state]) may be any Hadoop path Spark can write: hdfs://, s3a://,
# abfss://. For s3a:// or abfss:// the hadoop-aws / hadoop-azure jar must match the Hadoop
# version Spark runs with (the pyspark 4.2.0 wheel ships Hadoop 3.5.0 client jars; a
# "without-hadoop" Spark on YARN uses the cluster's), plus its cloud SDK bundle, e.g.
#   SPARK_SUBMIT_ARGS="--packages org.apache.hadoop:hadoop-aws:3.5.0 ..."  (set the same
# version your Spark has; check $SPARK_HOME/jars/hadoop-client-*.jar). Delta on S3 is safe with
# the default single-driver log store as long as only this one job writes its tables.
# [source] paths and [stream] checkpoint are different: segcompact lists and reads segments,
# and keeps its segment manifest beside the checkpoint, with Python's local file API. They must
# be POSIX paths: the source mounted at the same path on the driver and every executor, the
# checkpoint on storage that outlives the driver (an NFS/EFS/Azure Files mount, a shared PVC).
# An s3a:// or hdfs:// URI there is taken for a relative local path and does not work.
# A relative checkpoint would also be resolved twice, differently: Spark's query checkpoint
# against the default file system (the user's HDFS home on YARN) and the manifest against the
# driver's working directory. Use absolute paths.
#
# Stopping. Without --once the job stops cleanly, after the micro-batch in flight, when the
# *Python driver process* gets SIGTERM or SIGINT. A signal to the spark-submit JVM instead
# (a deleted driver pod, through tini) runs the JVM's shutdown hook, which stops the
# SparkContext at once; `yarn application -kill` signals the whole driver container and kills it
# 250 ms later (yarn.nodemanager.sleep-delay-before-sigkill.ms). Either way the batch in flight
# is cut short and the next start repeats it from the checkpoint. deploy/kubernetes/ has a
# preStop hook that signals the Python process first; see deploy/README.md.

set -euo pipefail

die() {
  echo "$0: $*" >&2
  exit 2
}

usage() {
  echo "usage: $0 {yarn|k8s|local} CONFIG [--once]" >&2
  exit 2
}

[[ $# -ge 2 ]] || usage
mode=$1 config=$2
shift 2
case $mode in yarn | k8s | local) ;; *) usage ;; esac
for arg in "$@"; do
  [[ $arg == --once ]] || { echo "$0: unknown argument: $arg" >&2; usage; }
done

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
job=$repo/streaming/segcompact_job.py

# The pinned Delta Lake build for Spark 4.2 / Scala 2.13 (pyproject.toml, jvm/delta/pom.xml).
delta_package=io.delta:delta-spark_4.2_2.13:4.4.0
# delta-spark's pom also brings delta-kernel, Unity Catalog clients and, through them, Hadoop,
# Parquet, Jackson and RoaringBitmap jars older than Spark 4.2's own. segcompact needs none of
# them (segcompact.spark.session and jvm/delta/pom.xml use delta-spark and delta-storage only),
# so they are left out; the two jars that remain are what `make setup` resolves.
delta_excludes=io.delta:delta-kernel-api,io.delta:delta-kernel-defaults,io.delta:delta-kernel-unitycatalog,io.unitycatalog:unitycatalog-client,io.unitycatalog:unitycatalog-hadoop

args=(
  --name segcompact
  # segcompact.spark.session.get_spark() sets these too; they are here so the command line
  # says what the job needs.
  --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension
  --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog
  --conf spark.sql.session.timeZone=UTC
  --conf spark.sql.execution.arrow.pyspark.enabled=true
)
default_delta=packages
[[ $mode == k8s ]] && default_delta=none
case ${SEGCOMPACT_DELTA:-$default_delta} in
  packages) args+=(--packages "$delta_package" --exclude-packages "$delta_excludes") ;;
  none) ;;
  *) die "SEGCOMPACT_DELTA must be packages or none" ;;
esac

case $mode in
  yarn)
    [[ -f $config ]] || die "config file not found: $config"
    [[ -n ${SEGCOMPACT_PYENV:-} ]] || die "set SEGCOMPACT_PYENV to the packed Python environment (tar.gz)"
    args+=(
      --master yarn --deploy-mode cluster
      # The packed environment is unpacked as ./environment in every container.
      --archives "$SEGCOMPACT_PYENV#environment"
      --conf spark.yarn.appMasterEnv.PYSPARK_PYTHON=./environment/bin/python
      --conf spark.executorEnv.PYSPARK_PYTHON=./environment/bin/python
      # The config is localised into the driver's working directory, where it is read (before
      # any Spark work) by its file name.
      --files "$config"
      # A long-running streaming job: let YARN restart the driver, counting only recent failures.
      --conf spark.yarn.maxAppAttempts=4
      --conf spark.yarn.am.attemptFailuresValidityInterval=1h
    )
    job_config=$(basename "$config")
    ;;
  k8s)
    [[ -n ${K8S_MASTER:-} ]] || die "set K8S_MASTER, e.g. k8s://https://kubernetes.default.svc:443"
    [[ -n ${SEGCOMPACT_IMAGE:-} ]] || die "set SEGCOMPACT_IMAGE (built from deploy/kubernetes/Dockerfile)"
    [[ -n ${K8S_PVC:-} ]] || die "set K8S_PVC, a ReadWriteMany claim holding segments, checkpoint and config"
    pvc=spark.kubernetes.driver.volumes.persistentVolumeClaim.segcompact
    epvc=spark.kubernetes.executor.volumes.persistentVolumeClaim.segcompact
    args+=(
      --master "$K8S_MASTER" --deploy-mode cluster
      --conf spark.kubernetes.namespace="${K8S_NAMESPACE:-default}"
      --conf spark.kubernetes.authenticate.driver.serviceAccountName="${K8S_SERVICE_ACCOUNT:-spark}"
      --conf spark.kubernetes.container.image="$SEGCOMPACT_IMAGE"
      --conf spark.pyspark.python=/opt/segcompact/venv/bin/python
      --conf spark.pyspark.driver.python=/opt/segcompact/venv/bin/python
      --conf "$pvc.options.claimName=$K8S_PVC" --conf "$pvc.mount.path=/segcompact"
      --conf "$epvc.options.claimName=$K8S_PVC" --conf "$epvc.mount.path=/segcompact"
    )
    # In cluster mode the driver pod reads the config before Spark starts, so it has to be in
    # the pod already: on the claim (CONFIG is its path there, e.g.
    # /segcompact/conf/compactor.toml) or in the image. --files would land in a temporary
    # directory only once the SparkContext exists.
    job_config=$config
    job=local:///opt/segcompact/streaming/segcompact_job.py
    ;;
  local)
    [[ -f $config ]] || die "config file not found: $config"
    args+=(--master "local[*]")
    job_config=$config
    ;;
esac

if [[ -n ${SPARK_HOME:-} ]]; then
  spark_submit=$SPARK_HOME/bin/spark-submit
else
  spark_submit=$(command -v spark-submit) || die "spark-submit not found; set SPARK_HOME"
fi

# SPARK_SUBMIT_ARGS is split on whitespace (no quoting inside it).
read -r -a extra <<<"${SPARK_SUBMIT_ARGS:-}"

set -x
exec "$spark_submit" "${args[@]}" "${extra[@]}" "$job" --config "$job_config" "$@"
