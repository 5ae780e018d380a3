"""The Spark session of an analysis: local by default, any master when given."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def spark_session(master: str | None = None, app: str = "testbed-analyze"):
    """A SparkSession; local[N] over this machine's cores unless a master URL is given.

    The Python workers run the interpreter the driver runs (so they see numpy and pyarrow), the
    web UI and the console progress bar are off (the job prints its own stages), and Spark's own
    logging is limited to errors. TESTBED_SPARK_DRIVER_MEMORY sets the driver's heap (default 4g);
    on a cluster the cluster's settings apply."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    cores = os.cpu_count() or 2
    local = master is None or master.startswith("local")
    log4j = os.path.join(HERE, "log4j2.properties")
    builder = (SparkSession.builder.appName(app)
               .master(master or f"local[{cores}]")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", "200000")
               .config("spark.sql.files.maxPartitionBytes", str(64 << 20))
               .config("spark.driver.extraJavaOptions", f"-Dlog4j.configurationFile=file:{log4j}")
               .config("spark.driver.memory", os.environ.get("TESTBED_SPARK_DRIVER_MEMORY", "4g")))
    if local:
        # a local job on a few cores: a few shuffle partitions, not the cluster default of 200
        builder = builder.config("spark.sql.shuffle.partitions", str(max(4, 2 * cores)))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
