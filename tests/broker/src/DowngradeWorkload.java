import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The workload of the downgrade tests (tests/test_broker_downgrades.py).
 *
 * <pre>
 * write BOOTSTRAP CONSUMER_GROUPS   on the writing broker (Kafka 4.4.0 at a lower
 *                                   metadata.version): classic groups that commit, a group with
 *                                   offsets only (admin), transactions committed, aborted and
 *                                   left open, and with CONSUMER_GROUPS=true a consumer-protocol
 *                                   group that commits
 * probe BOOTSTRAP OUT.json          on any broker, older ones included: what its Admin API
 *                                   answers about groups, their committed offsets and the
 *                                   transactions, as JSON
 * </pre>
 */
public final class DowngradeWorkload {
  private DowngradeWorkload() {}

  static final String TOPIC = "orders";

  public static void main(String[] args) throws Exception {
    if (args[0].equals("write")) {
      write(args[1], Boolean.parseBoolean(args[2]));
    } else {
      probe(args[1], new File(args[2]));
    }
  }

  static Properties common(String bootstrap) {
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    return p;
  }

  static void write(String bootstrap, boolean consumerGroups) throws Exception {
    try (Admin admin = Admin.create(common(bootstrap))) {
      admin.createTopics(List.of(new NewTopic(TOPIC, 3, (short) 1))).all().get();
      Properties pp = common(bootstrap);
      pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
      pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
      try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
        for (int i = 0; i < 30; i++) {
          producer.send(new ProducerRecord<>(TOPIC, i % 3, "k" + i, "v" + i));
        }
      }
      consume(bootstrap, "classic-a", "classic", 10);
      consume(bootstrap, "classic-b", "classic", 20);
      if (consumerGroups) {
        consume(bootstrap, "consumer-a", "consumer", 15);
      }
      Map<TopicPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
      offsets.put(new TopicPartition(TOPIC, 0), new OffsetAndMetadata(3, "by admin"));
      admin.alterConsumerGroupOffsets("offsets-only", offsets).all().get();
      transaction(bootstrap, "txn-commit", true);
      transaction(bootstrap, "txn-abort", false);
    }
  }

  /** Joins {@code group} with {@code protocol}, reads {@code count} records and commits. */
  static void consume(String bootstrap, String group, String protocol, int count) {
    Properties cp = common(bootstrap);
    cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    cp.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
    cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, count);
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
      consumer.subscribe(List.of(TOPIC));
      int seen = 0;
      long deadline = System.currentTimeMillis() + 30_000;
      while (seen < count && System.currentTimeMillis() < deadline) {
        seen += consumer.poll(Duration.ofMillis(200)).count();
      }
      consumer.commitSync();
    }
  }

  static void transaction(String bootstrap, String id, boolean commit) {
    Properties pp = common(bootstrap);
    pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id);
    pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
      producer.initTransactions();
      producer.beginTransaction();
      producer.send(new ProducerRecord<>(TOPIC, 1, id, "in a transaction"));
      if (commit) {
        producer.commitTransaction();
      } else {
        producer.abortTransaction();
      }
    }
  }

  static void probe(String bootstrap, File out) throws Exception {
    Map<String, Object> truth = new LinkedHashMap<>();
    Properties ap = common(bootstrap);
    ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
    try (Admin admin = Admin.create(ap)) {
      List<Map<String, Object>> groups = new ArrayList<>();
      List<Map<String, Object>> offsets = new ArrayList<>();
      Collection<ConsumerGroupListing> listed = admin.listConsumerGroups().all().get();
      for (ConsumerGroupListing g : listed) {
        Map<String, Object> group = new LinkedHashMap<>();
        group.put("groupId", g.groupId());
        group.put("type", g.type().map(Object::toString).orElse(null));
        group.put("state", g.groupState().map(Object::toString).orElse(null));
        groups.add(group);
        Map<TopicPartition, OffsetAndMetadata> committed =
            admin.listConsumerGroupOffsets(g.groupId()).partitionsToOffsetAndMetadata().get();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : committed.entrySet()) {
          if (e.getValue() == null) {
            continue;
          }
          Map<String, Object> o = new LinkedHashMap<>();
          o.put("group", g.groupId());
          o.put("topic", e.getKey().topic());
          o.put("partition", e.getKey().partition());
          o.put("offset", e.getValue().offset());
          offsets.add(o);
        }
      }
      truth.put("groups", groups);
      truth.put("offsets", offsets);
      List<Map<String, Object>> transactions = new ArrayList<>();
      Collection<TransactionListing> txns = admin.listTransactions().all().get();
      List<String> ids = new ArrayList<>();
      for (TransactionListing t : txns) {
        ids.add(t.transactionalId());
      }
      if (!ids.isEmpty()) {
        Map<String, TransactionDescription> described = admin.describeTransactions(ids).all().get();
        for (Map.Entry<String, TransactionDescription> e : described.entrySet()) {
          Map<String, Object> t = new LinkedHashMap<>();
          t.put("transactionalId", e.getKey());
          t.put("producerId", e.getValue().producerId());
          t.put("producerEpoch", e.getValue().producerEpoch());
          t.put("state", e.getValue().state().toString());
          transactions.add(t);
        }
      }
      truth.put("transactions", transactions);
    } catch (ExecutionException e) {
      truth.put("error", String.valueOf(e.getCause()));
    }
    new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(out, truth);
  }
}
