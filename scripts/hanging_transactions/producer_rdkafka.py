"""Transactional load with librdkafka (confluent-kafka): per txn ~10 records on the data topic,
then 1 record on each of 6 distinct partitions of the compacted topic, then commit.

  python producer_rdkafka.py BOOTSTRAP DATA_TOPIC COMPACT_TOPIC [--rate 20] [--recreate-on-error]

Commit errors that librdkafka calls retriable: commit retried (up to 120 s). Other
errors: abort and carry on; on a fatal error: new producer + init_transactions.
With --recreate-on-error: on any error, drop the producer (no abort) and make a new one.
Prints one line per event to stdout; SIGTERM ends it after the current transaction."""

import argparse
import random
import signal
import time

from confluent_kafka import KafkaError, KafkaException, Producer

stop = False


def on_term(*_):
    global stop
    stop = True


def log(msg):
    print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap")
    ap.add_argument("data")
    ap.add_argument("compact")
    ap.add_argument("--rate", type=float, default=20)
    ap.add_argument("--data-partitions", type=int, default=6)
    ap.add_argument("--compact-partitions", type=int, default=25)
    ap.add_argument("--recreate-on-error", action="store_true")
    ap.add_argument("--txn-id", default="hang-rdkafka")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    conf = {
        "bootstrap.servers": a.bootstrap,
        "transactional.id": a.txn_id,
        "transaction.timeout.ms": 60000,
        "enable.idempotence": True,
        "linger.ms": 5,
    }
    counters = {"committed": 0, "aborted": 0, "recreated": 0, "errors": 0}
    producer = None

    def new_producer():
        nonlocal producer
        producer = None
        while not stop:
            p = Producer(conf)
            try:
                p.init_transactions(30)
                producer = p
                counters["recreated"] += 1
                log(f"init_transactions ok (#{counters['recreated']})")
                return
            except KafkaException as e:
                log(f"init_transactions failed: {e}")
                time.sleep(1)
                try:
                    if e.args[0].fatal():
                        continue
                except Exception:
                    pass
                # retriable: retry on a fresh instance anyway (simple)

    def abort():
        while not stop:
            try:
                producer.abort_transaction(30)
                counters["aborted"] += 1
                log("aborted")
                return True
            except KafkaException as e:
                err = e.args[0]
                log(f"abort failed: {err} fatal={err.fatal()} retriable={err.retriable()}")
                if err.fatal():
                    new_producer()
                    return False
                if err.code() == KafkaError._CONFLICT:  # a timed-out commit still running
                    try:
                        producer.commit_transaction(30)
                        log("the pending commit completed")
                        return True
                    except KafkaException as e2:
                        log(f"pending commit: {e2.args[0]}")
                time.sleep(1)
        return False

    delivery_errors = []

    def commit(p, deadline_s=120.0):
        """commit_transaction, retried while librdkafka says the error is retriable (as mm2
        does, and as librdkafka requires: an abort while a timed-out commit is still in
        progress is refused with _CONFLICT)."""
        deadline = time.monotonic() + deadline_s
        while True:
            try:
                p.commit_transaction(30)
                return
            except KafkaException as e:
                err = e.args[0]
                if (
                    not a.recreate_on_error
                    and err.retriable()
                    and not err.txn_requires_abort()
                    and not err.fatal()
                    and time.monotonic() < deadline
                    and not stop
                ):
                    log(f"commit retriable error, retrying commit: {err}")
                    continue
                raise

    def on_delivery(err, msg):
        if err is not None:
            delivery_errors.append(err)

    new_producer()
    seq = 0
    period = 1.0 / a.rate
    last_report = time.monotonic()
    while not stop:
        started = time.monotonic()
        seq += 1
        try:
            producer.begin_transaction()
            for i in range(10):
                producer.produce(
                    a.data,
                    value=f"txn{seq}-{i}".encode(),
                    partition=(seq * 10 + i) % a.data_partitions,
                    on_delivery=on_delivery,
                )
            for p in random.sample(range(a.compact_partitions), 6):
                producer.produce(
                    a.compact,
                    key=f"k{p}".encode(),
                    value=f"txn{seq}".encode(),
                    partition=p,
                    on_delivery=on_delivery,
                )
            commit(producer)
            counters["committed"] += 1
        except KafkaException as e:
            err = e.args[0]
            counters["errors"] += 1
            log(
                f"txn {seq} error: {err} fatal={err.fatal()} abortable={err.txn_requires_abort()} "
                f"retriable={err.retriable()} "
                f"delivery_errors={[str(d) for d in delivery_errors[:3]]}"
            )
            delivery_errors.clear()
            if a.recreate_on_error or err.fatal():
                log("dropping producer, new one")
                producer = None  # destroyed (no abort sent)
                new_producer()
            else:
                abort()
        except BufferError as e:
            log(f"BufferError {e}")
            producer.poll(1)
        producer.poll(0)
        now = time.monotonic()
        if now - last_report > 10:
            log(f"stats {counters}")
            last_report = now
        time.sleep(max(0.0, period - (now - started)))
    log(f"stopping {counters}")
    if producer is not None:
        try:
            producer.flush(10)
        except Exception:
            pass


if __name__ == "__main__":
    main()
