"""What runs inside the Spark containers (the driver and the executors): standard library and pyspark only."""
