"""What the tests share: waiting, clusters, Kafka readers and writers, spec factories,
fakes and oracles."""
