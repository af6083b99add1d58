"""One SparkSession for the whole test run (local[2], bound to 127.0.0.1, no UI): it takes
~20 s to start. Spark tests are skipped when pyspark or Java is missing."""

import os
import shutil
import sys

import pytest


def _java_ok() -> bool:
    return bool(os.environ.get("JAVA_HOME")) or shutil.which("java") is not None


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    pytest.importorskip("pyspark")
    if not _java_ok():
        pytest.skip("Java is not installed (apt-get install openjdk-17-jre-headless)")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from neardup.engines.spark import session

    s = session(
        "local[2]",
        app_name="neardup-tests",
        shuffle_partitions=4,
        conf={
            "spark.default.parallelism": "4",
            "spark.driver.memory": "2g",
            "spark.local.dir": str(tmp_path_factory.mktemp("spark-local")),
            "spark.sql.adaptive.enabled": "false",
        },
    )
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()
