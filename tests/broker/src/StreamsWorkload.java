import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;

/**
 * Streams part of the broker tests' workload: a stateless Kafka Streams application using the
 * streams group protocol (KIP-1071) copies t-streams-in to t-streams-out, commits, and leaves its
 * group ("streams-app") Empty. Runs before BrokerWorkload, which records the broker's answers.
 *
 * <pre>java -cp streams-classes:streams-jars/* StreamsWorkload BOOTSTRAP STATE_DIR</pre>
 */
public final class StreamsWorkload {
  private static final long WAIT_MS = 60_000;
  private static final int RECORDS = 10;

  public static void main(String[] args) throws Exception {
    long start = System.currentTimeMillis();
    String bootstrap = args[0];
    Properties ap = new Properties();
    ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    try (Admin admin = Admin.create(ap)) {
      admin
          .createTopics(
              List.of(new NewTopic("t-streams-in", 2, (short) 1), new NewTopic("t-streams-out", 1, (short) 1)))
          .all()
          .get();
    }
    Properties pp = new Properties();
    pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
      for (int i = 0; i < RECORDS; i++) {
        producer.send(new ProducerRecord<>("t-streams-in", i % 2, "k" + i, "v" + i));
      }
    }

    Properties sp = new Properties();
    sp.put(StreamsConfig.APPLICATION_ID_CONFIG, "streams-app");
    sp.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    sp.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
    sp.put(StreamsConfig.STATE_DIR_CONFIG, args[1]);
    sp.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
    sp.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
    sp.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
    sp.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    StreamsBuilder builder = new StreamsBuilder();
    builder.<String, String>stream("t-streams-in").mapValues(v -> v.toUpperCase()).to("t-streams-out");
    KafkaStreams streams = new KafkaStreams(builder.build(), sp);
    streams.start();

    Properties cp = new Properties();
    cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    int seen = 0;
    long deadline = System.currentTimeMillis() + WAIT_MS;
    try (KafkaConsumer<String, String> reader = new KafkaConsumer<>(cp)) {
      reader.assign(List.of(new org.apache.kafka.common.TopicPartition("t-streams-out", 0)));
      while (seen < RECORDS) {
        if (System.currentTimeMillis() > deadline) {
          throw new IllegalStateException("the streams application copied " + seen + " records");
        }
        ConsumerRecords<String, String> records = reader.poll(Duration.ofMillis(200));
        seen += records.count();
      }
    }
    // Let a commit of the processed offsets happen, then leave the group.
    Thread.sleep(1_000);
    streams.close(
        CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
            .withTimeout(Duration.ofSeconds(30)));
    System.err.println("streams workload: done in " + (System.currentTimeMillis() - start) + " ms");
  }
}
