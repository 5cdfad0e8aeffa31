"""What the tests share: waiting, clusters, Kafka readers and writers, fakes and oracles."""
