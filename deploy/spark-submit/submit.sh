#!/usr/bin/env bash
# spark-submit of segcompact's streaming job (streaming/segcompact_job.py) to YARN or Kubernetes.
#
#   deploy/spark-submit/submit.sh yarn CONFIG [--once]
#   deploy/spark-submit/submit.sh k8s  CONFIG [--once]
#   deploy/spark-submit/submit.sh local CONFIG [--once]   # the same command on local[*]
#
# CONFIG is a compactor.toml (conf/compactor.toml documents every key); --once processes what
# is there and exits, without it the job runs until stopped. Anything in SPARK_SUBMIT_ARGS is
# added to spark-submit's own options (resources, queue, --conf ...; store settings belong in
# the config's [spark], see "Storage").
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
#   K8S_PVC               k8s, optional: a ReadWriteMany claim mounted at /segcompact on the
#                         driver and the executors, for locations that are local paths and/or
#                         the config (CONFIG is then its path there, /segcompact/...).
#   K8S_DRIVER_POD_TEMPLATE  k8s, optional: a driver pod template file
#                         (spark.kubernetes.driver.podTemplateFile, read by spark-submit on this
#                         machine), the way to mount the config from a ConfigMap (plain
#                         spark-submit's volume settings have no ConfigMap type), e.g. for
#                         deploy/kubernetes/'s ConfigMap segcompact-config:
#                           apiVersion: v1
#                           kind: Pod
#                           spec:
#                             containers:
#                               - name: spark-kubernetes-driver
#                                 volumeMounts: [{name: config, mountPath: /etc/segcompact}]
#                             volumes:
#                               - name: config
#                                 configMap: {name: segcompact-config}
#                         with CONFIG=/etc/segcompact/compactor.toml. With neither this nor
#                         K8S_PVC, CONFIG must be a file inside the image (not checked here).
#   K8S_S3_SECRET         k8s, optional: a Secret with keys AWS_ACCESS_KEY_ID and
#                         AWS_SECRET_ACCESS_KEY (deploy/kubernetes/'s segcompact-s3), set as
#                         those variables on the driver and the executors. Leave it unset with
#                         IAM roles for service accounts (see deploy/README.md).
#   SEGCOMPACT_DELTA      packages (default for yarn, local): --packages
#                         io.delta:delta-spark_4.2_2.13:4.4.0, resolved from Maven Central by the
#                         submitting machine; none (default for k8s): the jars are already on
#                         Spark's classpath (deploy/kubernetes/Dockerfile copies them into the
#                         image). packages on k8s also needs spark.kubernetes.file.upload.path,
#                         through which cluster mode ships the resolved jars to the pods.
#   SEGCOMPACT_S3_JARS    a directory of S3A's jars (hadoop-aws 3.5.0 and the AWS SDK v2 modules
#                         it uses, jvm/s3/pom.xml), passed with --jars. Default for yarn, local:
#                         .jars/s3 of this repository (`make setup`) when it holds jars, else
#                         nothing; none (default for k8s): not passed (the image has them in
#                         Spark's jars). A directory on k8s needs spark.kubernetes.file.upload.path
#                         as packages does. spark-submit keeps only the last --jars (and the last
#                         --packages) it is given: a --jars in SPARK_SUBMIT_ARGS replaces this
#                         one, so list S3A's jars there too or put other jars in Spark's jars/.
#
# Python. Executors import segcompact too (the kafka-segments source decodes segments in Python
# workers), and it needs compiled packages (pyarrow, lz4, zstandard, cramjam, crc32c, xxhash), so
# `--py-files segcompact.whl` alone is not enough: PySpark puts only .zip/.egg/.jar py-files on
# the executors' sys.path, and compiled dependencies cannot travel that way. Ship a whole
# environment instead, built on the same OS/architecture as the cluster nodes, e.g.
#
#   python3.11 -m venv /opt/segcompact-env
#   /opt/segcompact-env/bin/pip install "$(echo dist/segcompact-*.whl)[s3]" venv-pack
#   /opt/segcompact-env/bin/venv-pack -p /opt/segcompact-env -o segcompact-env.tar.gz
#
# (the wheel: `pip wheel --no-deps -w dist .`; [s3], [azure], [gcs]: the extras of the object
# stores the config uses, i.e. s3fs, adlfs, gcsfs; none for local paths only.)
# venv-pack does not carry the interpreter: every node needs the same Python 3.11+ at the same
# path (conda-pack carries it). The environment's pyspark is the 4.2.0 wheel; keep the
# cluster's Spark at 4.2.x. On Kubernetes the image is the environment.
#
# Storage. Every location of the config may be a local path or an object-store URI: [source]
# paths, the [state] tables, [stream] checkpoint (segcompact keeps its segment manifest beside
# it) and [output] path; s3a:// or s3://, abfss://, gs://, and on Databricks dbfs:/ and
# /Volumes/...; a Delta table may also be on any other Hadoop file system Spark has (hdfs://).
# Two sides open them:
# - Spark (the Delta tables, the query checkpoint) through the Hadoop connector of the scheme,
#   which must match the Hadoop Spark runs with (Spark 4.2 and the pyspark 4.2.0 wheel have
#   Hadoop 3.5.0 client jars). For S3 this script passes S3A's jars (SEGCOMPACT_S3_JARS); a
#   "without-hadoop" Spark on YARN uses the cluster's Hadoop: there set SEGCOMPACT_S3_JARS=none
#   and use the cluster's own hadoop-aws. Nothing here provides hadoop-azure or the GCS
#   connector (abfss://, gs:// on Spark's side).
# - segcompact's Python side (lists and reads segments in the driver and in the executors'
#   Python workers, writes the manifest and the output) through fsspec: the environment or the
#   image needs the wheel's extra for the store (segcompact[s3], [azure], [gcs]; see "Python").
# Both take their settings from the config's [spark] section, whose keys go to the session as
# they are and whose spark.hadoop.* ones (endpoint, region, path style, credentials provider)
# configure the Python side too: put store settings there, since a --conf spark.hadoop.* in
# SPARK_SUBMIT_ARGS reaches Spark only. get_spark() maps s3:// to S3A
# (spark.hadoop.fs.s3.impl, spark.hadoop.fs.AbstractFileSystem.s3.impl) unless [spark] sets
# fs.s3.impl; the command line below says so too whenever S3A's jars are on it (or in the image).
# Keep credentials out of the config (it travels with --files, or sits in a ConfigMap): both
# sides find them in the standard environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY;
# AZURE_STORAGE_*, GOOGLE_APPLICATION_CREDENTIALS) or the nodes' instance role. They are needed
# on the driver (segcompact checks every location's store, its library and S3 credentials, at
# start, before Spark, and exits 2 naming the key) and on the executors: on YARN an instance
# role (or spark.yarn.appMasterEnv.* and spark.executorEnv.* in SPARK_SUBMIT_ARGS, visible to
# whoever can list processes here); on Kubernetes K8S_S3_SECRET; locally this shell's.
# Object stores need no links or renames: each output version is published by a manifest
# (`segcompact export` copies the current ones out as a Kafka log dir), created with conditional
# writes (If-None-Match: *), which S3 and MinIO honour. Delta's default log store on S3 is safe
# as long as only this one job writes its tables.
# A local path must be absolute and mounted at the same path on the driver and every executor,
# the checkpoint on storage that outlives the driver (an NFS/EFS mount, a shared PVC), and a
# local output with symlink and rename (each version is published by swapping a symbolic link).
# A relative checkpoint would be resolved twice, differently: Spark's query checkpoint against
# the default file system (the user's HDFS home on YARN) and the manifest against the driver's
# working directory.
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
  [[ $arg == --once ]] || die "unknown argument: $arg (usage: $0 {yarn|k8s|local} CONFIG [--once])"
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
s3a_jars=()
s3a=false
default_s3_jars=$repo/.jars/s3
[[ $mode == k8s ]] && { default_s3_jars=none; s3a=true; }  # the image has them
s3_jars=${SEGCOMPACT_S3_JARS:-$default_s3_jars}
if [[ $s3_jars != none ]]; then
  if [[ -d $s3_jars ]]; then
    shopt -s nullglob
    s3a_jars=("$(cd "$s3_jars" && pwd)"/*.jar)
    shopt -u nullglob
  fi
  # Only the default may be missing or empty (no `make setup`): then no S3A from here.
  [[ ${#s3a_jars[@]} -gt 0 || -z ${SEGCOMPACT_S3_JARS:-} ]] ||
    die "SEGCOMPACT_S3_JARS must be none or a directory holding S3A's jars: $s3_jars"
fi
if [[ ${#s3a_jars[@]} -gt 0 ]]; then
  args+=(--jars "$(IFS=,; echo "${s3a_jars[*]}")")
  s3a=true
fi
if $s3a; then
  # s3:// through S3A, as get_spark() sets it (the checkpoint goes through FileContext, hence
  # the second key); a [spark] "spark.hadoop.fs.s3.impl" wins over both.
  args+=(
    --conf spark.hadoop.fs.s3.impl=org.apache.hadoop.fs.s3a.S3AFileSystem
    --conf spark.hadoop.fs.AbstractFileSystem.s3.impl=org.apache.hadoop.fs.s3a.S3A
  )
fi
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
    [[ $config == /* ]] || die "k8s: CONFIG is a path in the driver pod and must be absolute: $config"
    args+=(
      --master "$K8S_MASTER" --deploy-mode cluster
      --conf spark.kubernetes.namespace="${K8S_NAMESPACE:-default}"
      --conf spark.kubernetes.authenticate.driver.serviceAccountName="${K8S_SERVICE_ACCOUNT:-spark}"
      --conf spark.kubernetes.container.image="$SEGCOMPACT_IMAGE"
      --conf spark.pyspark.python=/opt/segcompact/venv/bin/python
      --conf spark.pyspark.driver.python=/opt/segcompact/venv/bin/python
    )
    if [[ -n ${K8S_PVC:-} ]]; then
      pvc=spark.kubernetes.driver.volumes.persistentVolumeClaim.segcompact
      epvc=spark.kubernetes.executor.volumes.persistentVolumeClaim.segcompact
      args+=(
        --conf "$pvc.options.claimName=$K8S_PVC" --conf "$pvc.mount.path=/segcompact"
        --conf "$epvc.options.claimName=$K8S_PVC" --conf "$epvc.mount.path=/segcompact"
      )
    fi
    if [[ -n ${K8S_DRIVER_POD_TEMPLATE:-} ]]; then
      [[ $K8S_DRIVER_POD_TEMPLATE == *://* || -f $K8S_DRIVER_POD_TEMPLATE ]] ||
        die "driver pod template not found: $K8S_DRIVER_POD_TEMPLATE"
      args+=(--conf spark.kubernetes.driver.podTemplateFile="$K8S_DRIVER_POD_TEMPLATE")
    fi
    if [[ -n ${K8S_S3_SECRET:-} ]]; then
      for role in driver executor; do
        for var in AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY; do
          args+=(--conf "spark.kubernetes.$role.secretKeyRef.$var=$K8S_S3_SECRET:$var")
        done
      done
    fi
    # In cluster mode the driver pod reads the config before Spark starts, so it has to be in
    # the pod already: on the claim, on a volume of the pod template, or in the image.
    # --files would land in a temporary directory only once the SparkContext exists.
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
