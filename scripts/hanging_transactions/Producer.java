// Transactional load with Kafka's Java client (speaks TV2 when the cluster's transaction.version is 2).
// java -cp <kafka classpath> Producer.java BOOTSTRAP DATA_TOPIC COMPACT_TOPIC [rate] [txnId]
// Per txn: 10 records on the data topic, 1 record on 6 distinct partitions of the compacted topic,
// commit. On error: abort (commit timeouts are retried, as the Java client demands); on a fatal
// error (fenced, etc.): close and make a new producer. SIGTERM ends it.
import java.time.Duration;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.*;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.*;
import org.apache.kafka.common.serialization.StringSerializer;

public class Producer {
    static final AtomicBoolean stop = new AtomicBoolean(false);
    static void log(String s) {
        System.out.println(LocalTime.now().format(DateTimeFormatter.ofPattern("HH:mm:ss")) + " " + s);
        System.out.flush();
    }
    static KafkaProducer<String, String> make(Properties props) {
        while (!stop.get()) {
            KafkaProducer<String, String> p = new KafkaProducer<>(props);
            try {
                p.initTransactions();
                log("init_transactions ok");
                return p;
            } catch (KafkaException e) {
                log("init_transactions failed: " + e);
                p.close(Duration.ofSeconds(1));
                try { Thread.sleep(1000); } catch (InterruptedException ie) { }
            }
        }
        return null;
    }
    static boolean fatal(Throwable e) {
        return e instanceof ProducerFencedException || e instanceof OutOfOrderSequenceException
            || e instanceof AuthorizationException || e instanceof UnsupportedVersionException
            || e instanceof InvalidProducerEpochException || e instanceof IllegalStateException;
    }
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], data = args[1], compact = args[2];
        double rate = args.length > 3 ? Double.parseDouble(args[3]) : 20;
        String txnId = args.length > 4 ? args[4] : "hang-java";
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("transactional.id", txnId);
        props.put("transaction.timeout.ms", "60000");
        props.put("enable.idempotence", "true");
        props.put("linger.ms", "5");
        props.put("max.block.ms", "30000");
        props.put("delivery.timeout.ms", "60000");
        props.put("request.timeout.ms", "30000");
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop.set(true);
            try { main.join(15000); } catch (InterruptedException e) { }
        }));
        Random rnd = new Random();
        KafkaProducer<String, String> p = make(props);
        long seq = 0, committed = 0, aborted = 0, errors = 0, recreated = 1;
        long period = (long) (1000 / rate), lastReport = System.currentTimeMillis();
        while (!stop.get() && p != null) {
            long started = System.currentTimeMillis();
            seq++;
            try {
                p.beginTransaction();
                for (int i = 0; i < 10; i++)
                    p.send(new ProducerRecord<>(data, (int) ((seq * 10 + i) % 6), null, "txn" + seq + "-" + i));
                List<Integer> parts = new ArrayList<>();
                for (int i = 0; i < 25; i++) parts.add(i);
                Collections.shuffle(parts, rnd);
                for (int i = 0; i < 6; i++)
                    p.send(new ProducerRecord<>(compact, parts.get(i), "k" + parts.get(i), "txn" + seq));
                while (true) {
                    try { p.commitTransaction(); break; }
                    catch (TimeoutException te) { log("txn " + seq + " commit timeout, retrying commit: " + te.getMessage()); if (stop.get()) throw te; }
                }
                committed++;
            } catch (Exception e) {
                errors++;
                log("txn " + seq + " error: " + e);
                if (fatal(e) || fatal(e.getCause())) {
                    log("fatal: closing producer, new one");
                    try { p.close(Duration.ofSeconds(5)); } catch (Exception x) { }
                    p = make(props); recreated++;
                } else {
                    boolean done = false;
                    while (!done && !stop.get()) {
                        try { p.abortTransaction(); aborted++; done = true; log("aborted"); }
                        catch (TimeoutException te) { log("abort timeout, retrying: " + te.getMessage()); }
                        catch (Exception ae) {
                            log("abort failed: " + ae + "; new producer");
                            try { p.close(Duration.ofSeconds(5)); } catch (Exception x) { }
                            p = make(props); recreated++; done = true;
                        }
                    }
                }
            }
            long now = System.currentTimeMillis();
            if (now - lastReport > 10000) {
                log("stats committed=" + committed + " aborted=" + aborted + " errors=" + errors + " producers=" + recreated);
                lastReport = now;
            }
            long sleep = period - (now - started);
            if (sleep > 0) Thread.sleep(sleep);
        }
        log("stopping committed=" + committed + " aborted=" + aborted + " errors=" + errors);
        if (p != null) p.close(Duration.ofSeconds(5));
    }
}
