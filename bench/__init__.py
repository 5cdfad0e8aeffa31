"""The benchmark harness: this mirror against Apache Kafka's MirrorMaker 2 on local clusters.

Not part of the product: it imports mm2 only for the local-cluster launcher, and Apache MM2's
jars are resolved for it alone (bench/pom.xml). Run `python -m bench --help`.
"""
