"""The copy path: what a copy task does, from its spec to its committed positions.

spec (what the planner hands a copy task), loop (consume and produce), transaction (the target
producer, its transactions and what a failure means), positions, offsets_reader and
task_offsets (Connect's offsets topic), stats (what a transaction copied), assignment
(partitions added to running tasks), routes, failure (errors across Spark), task (one copy
task from start to end).
See docs/architecture.md, "The copy path".
"""
