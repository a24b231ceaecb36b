import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Workload of the broker tests: drives classic, consumer and share groups through joins,
 * commits, rebalances, conversions and deletions, then records what the broker itself answers
 * about every group (listGroups, describe, listConsumerGroupOffsets / listStreamsGroupOffsets) as
 * JSON; the streams group comes from StreamsWorkload, run before this.
 *
 * <pre>java -cp classes:broker-jars/* BrokerWorkload BOOTSTRAP OUTPUT.json</pre>
 *
 * The truth is also taken at settled points on the way (every group Empty, no open
 * transaction), each with the end offsets of the __consumer_offsets partitions it holds for, so
 * a reader can check the state implied by that prefix of the log. Two groups ("classic-live",
 * "consumer-live") are left Stable with members when the final truth is taken; the process then halts without closing them, so no later record changes their state
 * before the broker is stopped (their session timeouts are long). Every wait is bounded.
 */
public final class BrokerWorkload {
  private static final Duration POLL = Duration.ofMillis(100);
  private static final long WAIT_MS = 30_000;
  private static final String[] CLASSIC_ASSIGNORS = {"range", "roundrobin", "sticky", "cooperative-sticky"};
  private static final Map<String, String> ASSIGNOR_CLASSES =
      Map.of(
          "range", "org.apache.kafka.clients.consumer.RangeAssignor",
          "roundrobin", "org.apache.kafka.clients.consumer.RoundRobinAssignor",
          "sticky", "org.apache.kafka.clients.consumer.StickyAssignor",
          "cooperative-sticky", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");

  private final String bootstrap;
  private final Admin admin;
  private final List<AutoCloseable> live = new ArrayList<>();
  private final List<Map<String, Object>> snapshots = new ArrayList<>();

  private BrokerWorkload(String bootstrap) {
    this.bootstrap = bootstrap;
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    this.admin = Admin.create(p);
  }

  public static void main(String[] args) throws Exception {
    long start = System.currentTimeMillis();
    BrokerWorkload w = new BrokerWorkload(args[0]);
    w.run(new File(args[1]));
    System.err.println("workload: done in " + (System.currentTimeMillis() - start) + " ms");
    System.err.flush();
    // Leave the live groups as they are: no LeaveGroup, no close.
    Runtime.getRuntime().halt(0);
  }

  private static void log(String what) {
    System.err.println("workload: " + what);
  }

  private void run(File output) throws Exception {
    topics();
    for (String assignor : CLASSIC_ASSIGNORS) {
      classicGroup("classic-" + assignor, List.of(assignor), List.of(assignor));
    }
    classicGroup("classic-mixed", List.of("range", "roundrobin"), List.of("roundrobin", "range"));
    snapshot("classic groups");
    consumerGroup("consumer-uniform", "uniform");
    consumerGroup("consumer-range", "range");
    regexGroup();
    upgrade();
    downgrade();
    snapshot("consumer groups, upgrade and downgrade");
    shareGroup();
    transactions();
    transactionOutcomes();
    adminOperations();
    lagGroups();
    snapshot("share group, transactions and admin operations");
    liveGroups();
    waitSettled();
    Map<String, Object> truth = settledTruth();
    truth.put("transactions", transactionTruth());
    truth.put("snapshots", snapshots);
    ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    File tmp = new File(output.getPath() + ".tmp");
    mapper.writeValue(tmp, truth);
    if (!tmp.renameTo(output)) {
      throw new IllegalStateException("could not write " + output);
    }
  }

  // ---------------------------------------------------------------------------------- set-up

  private void topics() throws Exception {
    List<NewTopic> topics =
        List.of(
            new NewTopic("t-classic", 3, (short) 1),
            new NewTopic("t-consumer", 3, (short) 1),
            new NewTopic("t-regex-a", 2, (short) 1),
            new NewTopic("t-regex-b", 1, (short) 1),
            new NewTopic("t-share", 1, (short) 1),
            new NewTopic("t-txn", 2, (short) 1),
            // Never written to: its segment stays empty (log end 0).
            new NewTopic("t-empty", 1, (short) 1),
            // Four partitions a test spreads over two broker images.
            new NewTopic("t-spread", 4, (short) 1));
    admin.createTopics(topics).all().get();
    try (KafkaProducer<String, String> producer = producer(null)) {
      for (NewTopic t : topics) {
        if (t.name().equals("t-empty")) {
          continue;
        }
        for (int partition = 0; partition < t.numPartitions(); partition++) {
          for (int i = 0; i < 10; i++) {
            producer.send(new ProducerRecord<>(t.name(), partition, "k" + i, "v" + i));
          }
        }
      }
      producer.flush();
    }
    log("topics created and filled");
  }

  private KafkaProducer<String, String> producer(String transactionalId) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    if (transactionalId != null) {
      p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
    }
    return new KafkaProducer<>(p);
  }

  private Properties consumerProps(String group, String clientId) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    return p;
  }

  private Properties classicProps(String group, String clientId, List<String> assignors) {
    Properties p = consumerProps(group, clientId);
    p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
    List<String> classes = new ArrayList<>();
    for (String a : assignors) {
      classes.add(ASSIGNOR_CLASSES.get(a));
    }
    p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, String.join(",", classes));
    p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
    p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
    p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, "10000");
    return p;
  }

  private Properties newProtocolProps(String group, String clientId, String serverAssignor) {
    Properties p = consumerProps(group, clientId);
    p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
    if (serverAssignor != null) {
      p.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, serverAssignor);
    }
    return p;
  }

  // ---------------------------------------------------------------------------------- helpers

  private static void await(String what, BooleanSupplier done, List<KafkaConsumer<?, ?>> polled) {
    long deadline = System.currentTimeMillis() + WAIT_MS;
    while (!done.getAsBoolean()) {
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException("timed out waiting for " + what);
      }
      if (polled.isEmpty()) {
        sleep(100);
      }
      for (KafkaConsumer<?, ?> c : polled) {
        c.poll(POLL);
      }
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** Poll every consumer until together they own exactly {@code partitions} partitions. */
  private static void awaitAssigned(String group, List<KafkaConsumer<?, ?>> consumers, int partitions) {
    await(
        group + " to assign " + partitions + " partitions",
        () -> {
          Set<TopicPartition> all = new HashSet<>();
          int total = 0;
          for (KafkaConsumer<?, ?> c : consumers) {
            if (c.assignment().isEmpty()) {
              return false;
            }
            all.addAll(c.assignment());
            total += c.assignment().size();
          }
          return all.size() == partitions && total == partitions;
        },
        consumers);
  }

  /** Commit offset 1 + partition + {@code base} with metadata for every owned partition. */
  private static void commitOwned(KafkaConsumer<?, ?> c, int base, String metadata) {
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    for (TopicPartition tp : c.assignment()) {
      offsets.put(tp, new OffsetAndMetadata(1 + tp.partition() + base, metadata));
    }
    c.commitSync(offsets);
  }

  private String groupState(String group) throws Exception {
    for (GroupListing g : admin.listGroups().all().get()) {
      if (g.groupId().equals(group)) {
        return g.groupState().map(Object::toString).orElse("?");
      }
    }
    return "absent";
  }

  private void awaitState(String group, String state) throws Exception {
    long deadline = System.currentTimeMillis() + WAIT_MS;
    while (!groupState(group).equalsIgnoreCase(state)) {
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException(group + " is " + groupState(group) + ", not " + state);
      }
      sleep(100);
    }
  }

  // ---------------------------------------------------------------------------------- groups

  /** A classic group of two members (one static, with a rack) that commit and leave. */
  private void classicGroup(String group, List<String> first, List<String> second) throws Exception {
    Properties staticProps = classicProps(group, group + "-static", first);
    staticProps.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, group + "-instance");
    staticProps.put(ConsumerConfig.CLIENT_RACK_CONFIG, "rack-a");
    KafkaConsumer<String, String> a = new KafkaConsumer<>(staticProps);
    KafkaConsumer<String, String> b = new KafkaConsumer<>(classicProps(group, group + "-dynamic", second));
    a.subscribe(List.of("t-classic"));
    b.subscribe(List.of("t-classic"));
    awaitAssigned(group, List.of(a, b), 3);
    commitOwned(a, 0, "meta " + group);
    commitOwned(b, 0, "meta " + group);
    // The static member does not leave on close: remove it as an administrator would.
    a.close();
    b.close();
    admin
        .removeMembersFromConsumerGroup(
            group,
            new RemoveMembersFromConsumerGroupOptions(List.of(new MemberToRemove(group + "-instance"))))
        .all()
        .get();
    awaitState(group, "Empty");
    log(group + " done");
  }

  /** A consumer-protocol group with a server assignor: two members, commit, leave. */
  private void consumerGroup(String group, String assignor) throws Exception {
    KafkaConsumer<String, String> a = new KafkaConsumer<>(newProtocolProps(group, group + "-a", assignor));
    Properties bp = newProtocolProps(group, group + "-b", assignor);
    bp.put(ConsumerConfig.CLIENT_RACK_CONFIG, "rack-b");
    KafkaConsumer<String, String> b = new KafkaConsumer<>(bp);
    a.subscribe(List.of("t-consumer"));
    b.subscribe(List.of("t-consumer"));
    awaitAssigned(group, List.of(a, b), 3);
    commitOwned(a, 2, "");
    commitOwned(b, 2, "meta " + group);
    a.close();
    b.close();
    awaitState(group, "Empty");
    log(group + " done");
  }

  /** A consumer-protocol group subscribed by a regular expression resolved by the broker. */
  private void regexGroup() throws Exception {
    String group = "consumer-regex";
    KafkaConsumer<String, String> a = new KafkaConsumer<>(newProtocolProps(group, group + "-a", null));
    a.subscribe(new SubscriptionPattern("t-regex-.*"));
    awaitAssigned(group, List.of(a), 3);
    commitOwned(a, 4, "regex");
    a.close();
    awaitState(group, "Empty");
    log(group + " done");
  }

  /** Online upgrade: a classic group is joined by a consumer-protocol member, then the
   * classic member leaves; the group is a consumer group from then on. */
  private void upgrade() throws Exception {
    String group = "upgrade";
    KafkaConsumer<String, String> classic =
        new KafkaConsumer<>(classicProps(group, group + "-classic", List.of("range")));
    classic.subscribe(List.of("t-classic"));
    awaitAssigned(group, List.of(classic), 3);
    commitOwned(classic, 0, "before upgrade");
    KafkaConsumer<String, String> modern = new KafkaConsumer<>(newProtocolProps(group, group + "-new", "uniform"));
    modern.subscribe(List.of("t-classic"));
    awaitAssigned(group, List.of(classic, modern), 3);
    classic.close();
    awaitAssigned(group, List.of(modern), 3);
    commitOwned(modern, 5, "after upgrade");
    modern.close();
    awaitState(group, "Empty");
    log(group + " done");
  }

  /** Downgrade: a consumer group is joined by a classic member, then the consumer-protocol
   * member leaves; the group converts back to a classic group. */
  private void downgrade() throws Exception {
    String group = "downgrade";
    KafkaConsumer<String, String> modern = new KafkaConsumer<>(newProtocolProps(group, group + "-new", "range"));
    modern.subscribe(List.of("t-consumer"));
    awaitAssigned(group, List.of(modern), 3);
    commitOwned(modern, 1, "before downgrade");
    KafkaConsumer<String, String> classic =
        new KafkaConsumer<>(classicProps(group, group + "-classic", List.of("range")));
    classic.subscribe(List.of("t-consumer"));
    awaitAssigned(group, List.of(modern, classic), 3);
    modern.close();
    awaitAssigned(group, List.of(classic), 3);
    commitOwned(classic, 6, "after downgrade");
    classic.close();
    awaitState(group, "Empty");
    log(group + " done");
  }

  /** Groups whose lag the forensics read against the data topics: committed offsets on the
   * empty topic and on every partition of the spread one, one partition caught up. */
  private void lagGroups() throws Exception {
    admin
        .alterConsumerGroupOffsets("lag-empty", Map.of(new TopicPartition("t-empty", 0), new OffsetAndMetadata(0)))
        .all()
        .get();
    Map<TopicPartition, OffsetAndMetadata> spread = new LinkedHashMap<>();
    for (int partition = 0; partition < 4; partition++) {
      spread.put(new TopicPartition("t-spread", partition), new OffsetAndMetadata(partition == 0 ? 10 : 3 * partition));
    }
    admin.alterConsumerGroupOffsets("lag-spread", spread).all().get();
    log("lag groups done");
  }

  /** A share group that accepts, releases (then accepts on redelivery) and rejects records. */
  private void shareGroup() throws Exception {
    String group = "share-g";
    ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
    admin
        .incrementalAlterConfigs(
            Map.of(
                resource,
                List.of(
                    new AlterConfigOp(
                        new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
        .all()
        .get();
    Properties p = consumerProps(group, group + "-a");
    p.remove(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG);
    p.remove(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG);
    p.put("share.acknowledgement.mode", "explicit");
    try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
      c.subscribe(List.of("t-share"));
      List<ConsumerRecord<String, String>> seen = new ArrayList<>();
      long deadline = System.currentTimeMillis() + WAIT_MS;
      int released = 0;
      while (seen.size() < 10) {
        if (System.currentTimeMillis() > deadline) {
          throw new IllegalStateException("share group saw " + seen.size() + " records");
        }
        ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(200));
        for (ConsumerRecord<String, String> r : records) {
          AcknowledgeType type;
          if (r.offset() == 2 && r.deliveryCount().orElse((short) 1) == 1) {
            type = AcknowledgeType.RELEASE;
            released++;
          } else if (r.offset() == 3) {
            type = AcknowledgeType.REJECT;
            seen.add(r);
          } else {
            type = AcknowledgeType.ACCEPT;
            seen.add(r);
          }
          c.acknowledge(r, type);
        }
        if (!records.isEmpty()) {
          c.commitSync();
        }
      }
      log(group + " acknowledged " + seen.size() + " records, released " + released);
    }
    awaitState(group, "Empty");
  }

  /** Transactional offset commits: one committed, one aborted. */
  private void transactions() throws Exception {
    ConsumerGroupMetadata group = new ConsumerGroupMetadata("txn-group");
    try (KafkaProducer<String, String> producer = producer("txn-1")) {
      producer.initTransactions();
      producer.beginTransaction();
      producer.send(new ProducerRecord<>("t-txn", 0, "k", "committed"));
      producer.sendOffsetsToTransaction(
          Map.of(
              new TopicPartition("t-txn", 0), new OffsetAndMetadata(7, "txn committed"),
              new TopicPartition("t-txn", 1), new OffsetAndMetadata(8, "txn committed")),
          group);
      producer.commitTransaction();
      producer.beginTransaction();
      producer.send(new ProducerRecord<>("t-txn", 1, "k", "aborted"));
      producer.sendOffsetsToTransaction(
          Map.of(new TopicPartition("t-txn", 1), new OffsetAndMetadata(9, "txn aborted")), group);
      producer.abortTransaction();
    }
    log("transactions done");
  }

  /** Transactions on data partitions that commit, abort, time out (a producer that begins and
   * is then left, as if killed) and are fenced (a second instance of the id), and one left
   * open at the end. */
  private void transactionOutcomes() throws Exception {
    admin.createTopics(List.of(new NewTopic("t-txn-disk", 2, (short) 1))).all().get();
    try (KafkaProducer<String, String> p = producer("txn-commit")) {
      p.initTransactions();
      p.beginTransaction();
      for (int i = 0; i < 3; i++) {
        p.send(new ProducerRecord<>("t-txn-disk", 0, "k" + i, "committed"));
      }
      p.commitTransaction();
    }
    try (KafkaProducer<String, String> p = producer("txn-abort")) {
      p.initTransactions();
      p.beginTransaction();
      p.send(new ProducerRecord<>("t-txn-disk", 0, "k", "aborted"));
      p.send(new ProducerRecord<>("t-txn-disk", 1, "k", "aborted"));
      p.flush();
      p.abortTransaction();
    }
    KafkaProducer<String, String> fenced = producer("txn-fenced");
    fenced.initTransactions();
    fenced.beginTransaction();
    fenced.send(new ProducerRecord<>("t-txn-disk", 1, "k", "fenced"));
    fenced.flush();
    try (KafkaProducer<String, String> next = producer("txn-fenced")) {
      next.initTransactions(); // bumps the epoch: the coordinator aborts the first one's
      next.beginTransaction();
      next.send(new ProducerRecord<>("t-txn-disk", 1, "k", "after the fence"));
      next.commitTransaction();
    }
    Properties shortTimeout = new Properties();
    shortTimeout.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "1500");
    KafkaProducer<String, String> killed = producer("txn-timeout", shortTimeout);
    killed.initTransactions();
    killed.beginTransaction();
    killed.send(new ProducerRecord<>("t-txn-disk", 0, "k", "never ended"));
    killed.flush(); // then left: no commit, no abort, no close
    long deadline = System.currentTimeMillis() + WAIT_MS;
    while (!transactionState("txn-timeout").equals("CompleteAbort")) {
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException("the coordinator did not abort txn-timeout");
      }
      sleep(200);
    }
    KafkaProducer<String, String> open = producer("txn-open");
    open.initTransactions();
    open.beginTransaction();
    open.send(new ProducerRecord<>("t-txn-disk", 1, "k", "open at the end"));
    open.flush(); // left open: Ongoing when the broker stops
    log("transaction outcomes done");
  }

  private KafkaProducer<String, String> producer(String transactionalId, Properties extra) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
    p.putAll(extra);
    return new KafkaProducer<>(p);
  }

  private String transactionState(String transactionalId) throws Exception {
    return admin
        .describeTransactions(List.of(transactionalId))
        .description(transactionalId)
        .get()
        .state()
        .toString();
  }

  /** ListTransactions, DescribeTransactions of every id, DescribeProducers of the transactional
   * topics' partitions. */
  private Map<String, Object> transactionTruth() throws Exception {
    Map<String, Object> out = new LinkedHashMap<>();
    List<String> ids = new ArrayList<>();
    List<Map<String, Object>> listed = new ArrayList<>();
    for (TransactionListing t : admin.listTransactions().all().get()) {
      ids.add(t.transactionalId());
      listed.add(
          Map.of(
              "transactionalId", t.transactionalId(),
              "producerId", t.producerId(),
              "state", t.state().toString()));
    }
    out.put("listed", listed);
    List<Map<String, Object>> described = new ArrayList<>();
    for (Map.Entry<String, TransactionDescription> e :
        new TreeMap<>(admin.describeTransactions(ids).all().get()).entrySet()) {
      TransactionDescription d = e.getValue();
      Map<String, Object> row = new LinkedHashMap<>();
      row.put("transactionalId", e.getKey());
      row.put("state", d.state().toString());
      row.put("producerId", d.producerId());
      row.put("producerEpoch", d.producerEpoch());
      row.put("transactionTimeoutMs", d.transactionTimeoutMs());
      row.put("transactionStartTimeMs", d.transactionStartTimeMs().isPresent() ? d.transactionStartTimeMs().getAsLong() : null);
      List<String> parts = new ArrayList<>();
      for (TopicPartition tp : d.topicPartitions()) {
        parts.add(tp.topic() + "-" + tp.partition());
      }
      parts.sort(null);
      row.put("partitions", parts);
      described.add(row);
    }
    out.put("described", described);
    List<TopicPartition> partitions = new ArrayList<>();
    for (String topic : List.of("t-txn", "t-txn-disk")) {
      for (int p = 0; p < 2; p++) {
        partitions.add(new TopicPartition(topic, p));
      }
    }
    List<Map<String, Object>> producers = new ArrayList<>();
    admin.describeProducers(partitions).all().get().forEach((tp, d) -> {
      for (ProducerState s : d.activeProducers()) {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("topic", tp.topic());
        row.put("partition", tp.partition());
        row.put("producerId", s.producerId());
        row.put("producerEpoch", s.producerEpoch());
        row.put("lastSequence", s.lastSequence());
        row.put("lastTimestamp", s.lastTimestamp());
        row.put("coordinatorEpoch", s.coordinatorEpoch().isPresent() ? s.coordinatorEpoch().getAsInt() : null);
        row.put("currentTransactionStartOffset", s.currentTransactionStartOffset().isPresent()
                ? s.currentTransactionStartOffset().getAsLong()
                : null);
        producers.add(row);
      }
    });
    out.put("producers", producers);
    return out;
  }

  /** Offsets altered and deleted by an administrator, and a deleted group. */
  private void adminOperations() throws Exception {
    admin
        .alterConsumerGroupOffsets(
            "admin-g",
            Map.of(
                new TopicPartition("t-classic", 0), new OffsetAndMetadata(5, "altered"),
                new TopicPartition("t-classic", 1), new OffsetAndMetadata(6),
                new TopicPartition("t-classic", 2), new OffsetAndMetadata(7)))
        .all()
        .get();
    admin.deleteConsumerGroupOffsets("admin-g", Set.of(new TopicPartition("t-classic", 1))).all().get();
    admin
        .alterConsumerGroupOffsets(
            "classic-range", Map.of(new TopicPartition("t-classic", 2), new OffsetAndMetadata(9, "rewound")))
        .all()
        .get();
    admin
        .alterConsumerGroupOffsets(
            "delete-me", Map.of(new TopicPartition("t-consumer", 0), new OffsetAndMetadata(3)))
        .all()
        .get();
    admin.deleteConsumerGroups(List.of("delete-me")).all().get();
    log("admin operations done");
  }

  /** Two groups left Stable with members for the truth snapshot; never closed. */
  private void liveGroups() throws Exception {
    Properties sp = classicProps("classic-live", "classic-live-static", List.of("sticky"));
    sp.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "classic-live-instance");
    sp.put(ConsumerConfig.CLIENT_RACK_CONFIG, "rack-a");
    sp.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "60000");
    Properties dp = classicProps("classic-live", "classic-live-dynamic", List.of("sticky"));
    dp.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "60000");
    KafkaConsumer<String, String> a = new KafkaConsumer<>(sp);
    KafkaConsumer<String, String> b = new KafkaConsumer<>(dp);
    Properties cp = newProtocolProps("consumer-live", "consumer-live-a", "uniform");
    cp.put(ConsumerConfig.CLIENT_RACK_CONFIG, "rack-b");
    KafkaConsumer<String, String> c = new KafkaConsumer<>(cp);
    KafkaConsumer<String, String> d = new KafkaConsumer<>(newProtocolProps("consumer-live", "consumer-live-b", "uniform"));
    live.addAll(List.of(a, b, c, d));
    for (KafkaConsumer<String, String> k : List.of(a, b)) {
      k.subscribe(List.of("t-classic"));
    }
    for (KafkaConsumer<String, String> k : List.of(c, d)) {
      k.subscribe(List.of("t-consumer"));
    }
    List<KafkaConsumer<?, ?>> all = List.of(a, b, c, d);
    await(
        "live groups to settle",
        () -> sizes(a, b) == 3 && sizes(c, d) == 3 && !a.assignment().isEmpty() && !b.assignment().isEmpty()
            && !c.assignment().isEmpty() && !d.assignment().isEmpty(),
        all);
    commitOwned(a, 3, "live");
    commitOwned(b, 3, "live");
    commitOwned(c, 3, "live");
    commitOwned(d, 3, "live");
    // Keep heartbeating until the broker says both groups are Stable.
    await(
        "live groups Stable",
        () -> {
          try {
            return groupState("classic-live").equals("Stable") && groupState("consumer-live").equals("Stable");
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        },
        all);
    log("live groups stable");
  }

  private static int sizes(KafkaConsumer<?, ?> x, KafkaConsumer<?, ?> y) {
    Set<TopicPartition> all = new HashSet<>(x.assignment());
    all.addAll(y.assignment());
    return x.assignment().size() + y.assignment().size() == all.size() ? all.size() : -1;
  }

  /** Every group but the live ones Empty (pending joins and leaves written). */
  private void waitSettled() throws Exception {
    long deadline = System.currentTimeMillis() + WAIT_MS;
    while (true) {
      List<String> busy = new ArrayList<>();
      for (GroupListing g : admin.listGroups().all().get()) {
        String state = g.groupState().map(Object::toString).orElse("?");
        boolean isLive = g.groupId().endsWith("-live");
        if (!(isLive ? state.equals("Stable") : state.equals("Empty"))) {
          busy.add(g.groupId() + "=" + state);
        }
      }
      if (busy.isEmpty()) {
        return;
      }
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException("groups did not settle: " + busy);
      }
      sleep(100);
    }
  }

  // ---------------------------------------------------------------------------------- truth

  private void snapshot(String name) throws Exception {
    waitSettled();
    Map<String, Object> truth = settledTruth();
    truth.put("name", name);
    snapshots.add(truth);
    log("snapshot: " + name);
  }

  /** End offsets of every __consumer_offsets partition, by partition number. */
  private Map<String, Long> offsetsTopicEnd() throws Exception {
    TopicDescription d =
        admin.describeTopics(List.of("__consumer_offsets")).allTopicNames().get().get("__consumer_offsets");
    Map<TopicPartition, org.apache.kafka.clients.admin.OffsetSpec> request = new HashMap<>();
    d.partitions()
        .forEach(
            p ->
                request.put(
                    new TopicPartition("__consumer_offsets", p.partition()),
                    org.apache.kafka.clients.admin.OffsetSpec.latest()));
    Map<String, Long> out = new TreeMap<>();
    admin
        .listOffsets(request)
        .all()
        .get()
        .forEach((tp, info) -> out.put(Integer.toString(tp.partition()), info.offset()));
    return out;
  }

  /** The truth with the end offsets it holds for: taken again until the log did not move
   * (transaction markers, for one, are written after the commit returns). */
  private Map<String, Object> settledTruth() throws Exception {
    long deadline = System.currentTimeMillis() + WAIT_MS;
    while (true) {
      Map<String, Long> before = offsetsTopicEnd();
      Map<String, Object> truth = truth();
      Map<String, Long> after = offsetsTopicEnd();
      if (before.equals(after)) {
        truth.put("consumerOffsetsEnd", after);
        return truth;
      }
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException("__consumer_offsets kept moving: " + before + " -> " + after);
      }
      sleep(200);
    }
  }

  private Map<String, Object> truth() throws Exception {
    Map<String, Object> out = new LinkedHashMap<>();
    Map<String, String> topicIds = new TreeMap<>();
    Map<String, TopicDescription> described =
        admin.describeTopics(admin.listTopics().names().get()).allTopicNames().get();
    for (TopicDescription d : described.values()) {
      topicIds.put(d.name(), d.topicId().toString());
    }
    out.put("topicIds", topicIds);
    Collection<GroupListing> listings = admin.listGroups().all().get();
    List<String> consumerIds = new ArrayList<>();
    List<String> shareIds = new ArrayList<>();
    List<String> streamsIds = new ArrayList<>();
    Map<String, Map<String, Object>> groups = new TreeMap<>();
    for (GroupListing g : listings) {
      Map<String, Object> row = new LinkedHashMap<>();
      row.put("groupId", g.groupId());
      row.put("type", g.type().map(GroupType::toString).orElse(null));
      row.put("protocolType", g.protocol());
      row.put("state", g.groupState().map(Object::toString).orElse(null));
      groups.put(g.groupId(), row);
      GroupType type = g.type().orElse(GroupType.UNKNOWN);
      if (type == GroupType.SHARE) {
        shareIds.add(g.groupId());
      } else if (type == GroupType.STREAMS) {
        streamsIds.add(g.groupId());
      } else if (type == GroupType.CLASSIC || type == GroupType.CONSUMER) {
        consumerIds.add(g.groupId());
      }
    }
    for (ConsumerGroupDescription d : admin.describeConsumerGroups(consumerIds).all().get().values()) {
      Map<String, Object> row = groups.get(d.groupId());
      row.put("describedType", d.type().toString());
      row.put("describedState", d.groupState().toString());
      row.put("assignor", d.partitionAssignor());
      row.put("groupEpoch", d.groupEpoch().orElse(null));
      List<Map<String, Object>> members = new ArrayList<>();
      for (MemberDescription m : d.members()) {
        Map<String, Object> mr = new LinkedHashMap<>();
        mr.put("memberId", m.consumerId());
        mr.put("instanceId", m.groupInstanceId().orElse(null));
        mr.put("clientId", m.clientId());
        mr.put("host", m.host());
        mr.put("memberEpoch", m.memberEpoch().orElse(null));
        mr.put("upgraded", m.upgraded().orElse(null));
        Map<String, List<Integer>> assignment = new TreeMap<>();
        for (TopicPartition tp : m.assignment().topicPartitions()) {
          assignment.computeIfAbsent(tp.topic(), k -> new ArrayList<>()).add(tp.partition());
        }
        assignment.values().forEach(l -> l.sort(null));
        mr.put("assignment", assignment);
        members.add(mr);
      }
      row.put("members", members);
    }
    for (ShareGroupDescription d : admin.describeShareGroups(shareIds).all().get().values()) {
      Map<String, Object> row = groups.get(d.groupId());
      row.put("describedState", d.groupState().toString());
      row.put("groupEpoch", d.groupEpoch());
      List<Map<String, Object>> members = new ArrayList<>();
      for (ShareMemberDescription m : d.members()) {
        members.add(Map.of("memberId", m.consumerId(), "clientId", m.clientId()));
      }
      row.put("members", members);
    }
    for (StreamsGroupDescription d : admin.describeStreamsGroups(streamsIds).all().get().values()) {
      Map<String, Object> row = groups.get(d.groupId());
      row.put("describedState", d.groupState().toString());
      row.put("groupEpoch", d.groupEpoch());
      List<Map<String, Object>> members = new ArrayList<>();
      for (StreamsGroupMemberDescription m : d.members()) {
        Map<String, Object> mr = new LinkedHashMap<>();
        mr.put("memberId", m.memberId());
        mr.put("instanceId", m.instanceId().orElse(null));
        mr.put("clientId", m.clientId());
        mr.put("memberEpoch", m.memberEpoch());
        members.add(mr);
      }
      row.put("members", members);
    }
    out.put("groups", new ArrayList<>(groups.values()));
    List<Map<String, Object>> offsets = new ArrayList<>();
    List<String> withOffsets = new ArrayList<>(consumerIds);
    withOffsets.addAll(streamsIds);
    for (String group : withOffsets) {
      Map<TopicPartition, OffsetAndMetadata> committed =
          streamsIds.contains(group)
              ? admin
                  .listStreamsGroupOffsets(Map.of(group, new ListStreamsGroupOffsetsSpec()))
                  .partitionsToOffsetAndMetadata(group)
                  .get()
              : admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
      for (Map.Entry<TopicPartition, OffsetAndMetadata> e : committed.entrySet()) {
        if (e.getValue() == null) {
          continue;
        }
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("group", group);
        row.put("topic", e.getKey().topic());
        row.put("partition", e.getKey().partition());
        row.put("offset", e.getValue().offset());
        row.put("metadata", e.getValue().metadata());
        row.put("leaderEpoch", e.getValue().leaderEpoch().orElse(null));
        offsets.add(row);
      }
    }
    offsets.sort(
        (x, y) ->
            (x.get("group") + "/" + x.get("topic") + "/" + String.format("%05d", (Integer) x.get("partition")))
                .compareTo(
                    y.get("group") + "/" + y.get("topic") + "/" + String.format("%05d", (Integer) y.get("partition"))));
    out.put("offsets", offsets);
    out.put("logEnds", logEnds(described.keySet()));
    List<Map<String, Object>> shareOffsets = new ArrayList<>();
    for (String group : shareIds) {
      Map<TopicPartition, SharePartitionOffsetInfo> info =
          admin
              .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
              .partitionsToOffsetInfo(group)
              .get();
      for (Map.Entry<TopicPartition, SharePartitionOffsetInfo> e : info.entrySet()) {
        if (e.getValue() == null) {
          continue;
        }
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("group", group);
        row.put("topic", e.getKey().topic());
        row.put("partition", e.getKey().partition());
        row.put("startOffset", e.getValue().startOffset());
        row.put("leaderEpoch", e.getValue().leaderEpoch().orElse(null));
        row.put("lag", e.getValue().lag().orElse(null));
        shareOffsets.add(row);
      }
    }
    out.put("shareOffsets", shareOffsets);
    return out;
  }

  /** The log end offset of every partition of the data topics ("topic-partition" -> end). */
  private Map<String, Long> logEnds(Collection<String> topics) throws Exception {
    Map<TopicPartition, org.apache.kafka.clients.admin.OffsetSpec> request = new LinkedHashMap<>();
    for (TopicDescription d : admin.describeTopics(topics).allTopicNames().get().values()) {
      if (d.name().startsWith("__")) {
        continue;
      }
      for (org.apache.kafka.common.TopicPartitionInfo p : d.partitions()) {
        request.put(new TopicPartition(d.name(), p.partition()), org.apache.kafka.clients.admin.OffsetSpec.latest());
      }
    }
    Map<String, Long> out = new TreeMap<>();
    admin.listOffsets(request).all().get().forEach((tp, info) -> out.put(tp.topic() + "-" + tp.partition(), info.offset()));
    return out;
  }
}
