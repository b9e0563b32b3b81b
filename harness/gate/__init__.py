"""The Kafka-aware gate: framing, transaction points, holds."""
