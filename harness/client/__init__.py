"""The harness's own Kafka clients: the workload and its producer, the committed reader, topics, transactions."""
