"""Integration tests: real Kafka brokers."""
