"""TopicAdmin.ask_topic_ids: the DescribeTopics request leaves at the call, its answer is
waited for later (a copy task asks before its flush and reads the answer after it)."""

from __future__ import annotations

import concurrent.futures
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicCollection

from mm2.errors import KafkaClientError
from mm2.kafka.failure import ClientWatch
from mm2.kafka.topics import TopicAdmin


class FakeAdmin:
    def __init__(self, answers: dict[str, str | KafkaError]) -> None:
        self.answers = answers
        self.asked: list[list[str]] = []

    def describe_topics(
        self, topics: TopicCollection, request_timeout: float
    ) -> dict[str, concurrent.futures.Future[Any]]:
        names = list(topics.topic_names)
        self.asked.append(names)
        futures: dict[str, concurrent.futures.Future[Any]] = {}
        for name in names:
            future: concurrent.futures.Future[Any] = concurrent.futures.Future()
            answer = self.answers[name]
            if isinstance(answer, KafkaError):
                future.set_exception(KafkaException(answer))
            else:
                future.set_result(SimpleNamespace(topic_id=answer))
            futures[name] = future
        return futures


def _admin(answers: dict[str, str | KafkaError]) -> tuple[TopicAdmin, FakeAdmin]:
    admin = TopicAdmin.__new__(TopicAdmin)  # no AdminClient, no connection
    fake = FakeAdmin(answers)
    admin._admin = fake  # type: ignore[assignment]
    admin._watch = ClientWatch({"bootstrap.servers": "s:9092"})
    admin._timeout = 1.0
    return admin, fake


def test_the_request_leaves_at_the_call_and_a_topic_gone_is_left_out() -> None:
    admin, fake = _admin({"orders": "A", "gone": KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)})
    answer = admin.ask_topic_ids(["orders", "gone", "orders"])
    assert fake.asked == [["gone", "orders"]]  # sent already, once per topic
    assert answer() == {"orders": "A"}
    assert admin.topic_ids([]) == {} and len(fake.asked) == 1  # nothing to ask: no request


def test_an_answer_that_does_not_come_raises_with_the_answer() -> None:
    admin, _ = _admin({"orders": KafkaError(KafkaError._TIMED_OUT, "timed out")})
    answer = admin.ask_topic_ids(["orders"])
    with pytest.raises(KafkaClientError, match="describing topic orders"):
        answer()


def test_the_requests_that_failed_are_each_their_error_and_the_others_left_out() -> None:
    admin, _ = _admin({})
    done: concurrent.futures.Future[None] = concurrent.futures.Future()
    done.set_result(None)
    refused: concurrent.futures.Future[None] = concurrent.futures.Future()
    refused.set_exception(KafkaException(KafkaError(KafkaError.POLICY_VIOLATION, "too many")))
    failures = admin._failures({"a": done, "b": refused}, lambda t: f"adding partitions to {t}")
    assert list(failures) == ["b"]
    assert "adding partitions to b" in str(failures["b"])
