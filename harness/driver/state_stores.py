"""The state store providers a stateful pipeline runs with: a matrix dimension, since each restores
state its own way (delta files and snapshots; RocksDB checkpoints, with or without changelogs).

Standard library only: the driver's Spark application imports it.
"""

DEFAULT_STATE_STORE = "hdfs"  # Spark's default, HDFSBackedStateStoreProvider
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

STATE_STORES: dict[str, dict[str, str]] = {
    DEFAULT_STATE_STORE: {},
    "rocksdb": {"spark.sql.streaming.stateStore.providerClass": ROCKSDB},
    "rocksdb-changelog": {
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    },
}
