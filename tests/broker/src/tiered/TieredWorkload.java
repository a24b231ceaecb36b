import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Workload of the tiered-storage broker test (tests/broker/tiered.py), in steps the test runs
 * one after the other against a broker with remote storage (LocalTieredStorage):
 *
 * <pre>
 * java -cp ... TieredWorkload load BOOTSTRAP REMOTE_ROOT      topics, records, uploads, a delete
 * java -cp ... TieredWorkload pause BOOTSTRAP REMOTE_ROOT     an upload left half done
 * java -cp ... TieredWorkload truth BOOTSTRAP REMOTE_ROOT OUT.json   after the restart
 * </pre>
 *
 * "load" creates the tiered topics (small segments, one second of local retention; "tiered-kept"
 * keeps every segment locally too), writes records until every partition has segments in remote
 * storage and local retention has removed some of them, and deletes the topic "tiered-gone"
 * once its segments are remote. "pause" asks
 * the storage's PausingTransferer to stop the next copy half way and writes records until a
 * copy is paused: the test then kills the broker. "truth", after the broker restarted, writes a
 * few records in the new leader epoch, waits until the partitions' offsets stop moving and
 * records what the broker answers: per partition its log start (earliest), local log start
 * (earliest-local), highest remote offset (latest-tiered) and log end (latest), the topic ids,
 * and the local bytes per partition (describeLogDirs). Every wait is bounded.
 */
public final class TieredWorkload {
  private static final long WAIT_MS = 60_000;
  static final String TIERED = "tiered";
  static final String GONE = "tiered-gone";
  static final String KEPT = "tiered-kept";
  static final String LOCAL = "local-only";
  private static final Map<String, Integer> PARTITIONS =
      Map.of(TIERED, 2, GONE, 1, KEPT, 1, LOCAL, 1);

  private final String bootstrap;
  private final File remoteRoot;
  private final Admin admin;
  private int sent;

  private TieredWorkload(String bootstrap, File remoteRoot) {
    this.bootstrap = bootstrap;
    this.remoteRoot = remoteRoot;
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    this.admin = Admin.create(p);
  }

  public static void main(String[] args) throws Exception {
    long start = System.currentTimeMillis();
    TieredWorkload w = new TieredWorkload(args[1], new File(args[2]));
    switch (args[0]) {
      case "load" -> w.load();
      case "pause" -> w.pause();
      case "truth" -> w.truth(new File(args[3]));
      default -> throw new IllegalArgumentException("unknown step " + args[0]);
    }
    log(args[0] + ": done in " + (System.currentTimeMillis() - start) + " ms");
    System.err.flush();
    Runtime.getRuntime().halt(0);
  }

  private static void log(String what) {
    System.err.println("tiered workload: " + what);
  }

  private static void waitFor(String what, BooleanSupplier done) throws InterruptedException {
    long deadline = System.currentTimeMillis() + WAIT_MS;
    while (!done.getAsBoolean()) {
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException("timed out waiting for " + what);
      }
      Thread.sleep(200);
    }
  }

  // ------------------------------------------------------------------------------------ load

  private void load() throws Exception {
    Map<String, String> tiered = new HashMap<>();
    tiered.put("remote.storage.enable", "true");
    tiered.put("internal.segment.bytes", "4096");
    tiered.put("local.retention.ms", "1000");
    tiered.put("retention.ms", "-1");
    tiered.put("file.delete.delay.ms", "100");
    List<NewTopic> topics = new ArrayList<>();
    topics.add(new NewTopic(TIERED, PARTITIONS.get(TIERED), (short) 1).configs(tiered));
    topics.add(new NewTopic(GONE, PARTITIONS.get(GONE), (short) 1).configs(tiered));
    Map<String, String> kept = new HashMap<>(tiered);
    kept.put("local.retention.ms", "-2"); // local retention = retention: every segment stays
    topics.add(new NewTopic(KEPT, PARTITIONS.get(KEPT), (short) 1).configs(kept));
    topics.add(
        new NewTopic(LOCAL, PARTITIONS.get(LOCAL), (short) 1)
            .configs(Map.of("internal.segment.bytes", "4096")));
    admin.createTopics(topics).all().get();
    for (int round = 0; round < 6; round++) {
      produce(List.of(TIERED, GONE, KEPT, LOCAL), 40);
      Thread.sleep(300);
    }
    waitFor(
        "remote segments and local retention in every tiered partition",
        () -> {
          Map<TopicPartition, long[]> now = offsets(List.of(TIERED, GONE, KEPT));
          return now.entrySet().stream()
              .allMatch(e -> e.getValue()[2] >= 0
                  && (e.getKey().topic().equals(KEPT) || e.getValue()[1] > 0));
        });
    log("segments copied and local retention ran");
    Map<String, Object> gone = Map.of("topicId", topicIds(List.of(GONE)).get(GONE));
    admin.deleteTopics(List.of(GONE)).all().get();
    waitFor(
        "the deleted topic's remote files to go",
        () -> {
          File[] dirs = new File(remoteRoot, "kafka-tiered-storage").listFiles();
          if (dirs == null) {
            return true;
          }
          for (File d : dirs) {
            File[] files = d.listFiles();
            if (d.getName().startsWith(GONE + "-0-") && files != null && files.length > 0) {
              return false;
            }
          }
          return true;
        });
    new ObjectMapper()
        .writeValue(new File(remoteRoot.getParentFile(), "deleted-topic.json"), gone);
    log("topic " + GONE + " deleted");
  }

  // ----------------------------------------------------------------------------------- pause

  private void pause() throws Exception {
    File paused = new File(remoteRoot, "upload-paused");
    Files.writeString(new File(remoteRoot, "pause-uploads").toPath(), "pause\n");
    waitFor(
        "a paused upload",
        () -> {
          if (!paused.exists()) {
            try {
              produceTo(new TopicPartition(TIERED, 0), 20);
              Thread.sleep(200);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
          return paused.exists();
        });
    log("an upload is paused: " + Files.readString(paused.toPath()));
  }

  // ----------------------------------------------------------------------------------- truth

  private void truth(File output) throws Exception {
    produce(List.of(TIERED, KEPT), 60);
    // Settled: the same answers twice, two seconds apart, with the restarted copy done (every
    // tiered partition's remote end reached its segments before the active one).
    Map<TopicPartition, long[]> last = new HashMap<>();
    long deadline = System.currentTimeMillis() + WAIT_MS;
    while (true) {
      Map<TopicPartition, long[]> now = offsets(List.of(TIERED, KEPT, LOCAL));
      if (same(now, last)) {
        last = now;
        break;
      }
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException("the offsets did not settle");
      }
      last = now;
      Thread.sleep(2000);
    }
    Map<String, Object> truth = new LinkedHashMap<>();
    Map<String, Object> partitions = new TreeMap<>();
    Map<String, Long> sizes = localSizes();
    for (Map.Entry<TopicPartition, long[]> e : last.entrySet()) {
      long[] o = e.getValue();
      Map<String, Object> p = new LinkedHashMap<>();
      p.put("earliest", o[0]);
      p.put("earliestLocal", o[1]);
      p.put("latestTiered", o[2]);
      p.put("latest", o[3]);
      p.put("localBytes", sizes.get(e.getKey().toString()));
      partitions.put(e.getKey().toString(), p);
    }
    truth.put("partitions", partitions);
    truth.put("topicIds", topicIds(List.of(TIERED, KEPT, LOCAL)));
    truth.put("recordsSent", sent);
    new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(output, truth);
  }

  private static boolean same(Map<TopicPartition, long[]> a, Map<TopicPartition, long[]> b) {
    if (!a.keySet().equals(b.keySet())) {
      return false;
    }
    for (TopicPartition tp : a.keySet()) {
      if (!java.util.Arrays.equals(a.get(tp), b.get(tp))) {
        return false;
      }
    }
    return true;
  }

  // ------------------------------------------------------------------------------- helpers

  private KafkaProducer<String, String> producer() {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
    p.put(ProducerConfig.BATCH_SIZE_CONFIG, "1024");
    return new KafkaProducer<>(p);
  }

  private void produce(List<String> topics, int perPartition) throws Exception {
    for (String t : topics) {
      for (int partition = 0; partition < PARTITIONS.get(t); partition++) {
        produceTo(new TopicPartition(t, partition), perPartition);
      }
    }
  }

  private void produceTo(TopicPartition tp, int count) {
    try (KafkaProducer<String, String> producer = producer()) {
      for (int i = 0; i < count; i++) {
        String value = "value-" + sent + "-" + "x".repeat(80);
        producer.send(new ProducerRecord<>(tp.topic(), tp.partition(), "k" + (sent % 17), value));
        sent++;
        if (i % 5 == 4) {
          producer.flush();
        }
      }
      producer.flush();
    }
  }

  /** Per partition: earliest, earliest-local, latest-tiered and latest offsets. */
  private Map<TopicPartition, long[]> offsets(List<String> topics) {
    try {
      List<OffsetSpec> specs =
          List.of(
              OffsetSpec.earliest(),
              OffsetSpec.earliestLocal(),
              OffsetSpec.latestTiered(),
              OffsetSpec.latest());
      Map<TopicPartition, long[]> out = new TreeMap<>((a, b) -> a.toString().compareTo(b.toString()));
      for (int i = 0; i < specs.size(); i++) {
        Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        for (String t : topics) {
          for (int partition = 0; partition < PARTITIONS.get(t); partition++) {
            request.put(new TopicPartition(t, partition), specs.get(i));
          }
        }
        Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> answer =
            admin.listOffsets(request).all().get();
        for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e :
            answer.entrySet()) {
          out.computeIfAbsent(e.getKey(), k -> new long[specs.size()])[i] = e.getValue().offset();
        }
      }
      return out;
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private Map<String, String> topicIds(List<String> topics) throws Exception {
    Map<String, String> ids = new TreeMap<>();
    for (Map.Entry<String, TopicDescription> e :
        admin.describeTopics(topics).allTopicNames().get().entrySet()) {
      ids.put(e.getKey(), e.getValue().topicId().toString());
    }
    return ids;
  }

  private Map<String, Long> localSizes() throws Exception {
    Map<String, Long> sizes = new TreeMap<>();
    Map<Integer, Map<String, LogDirDescription>> dirs =
        admin.describeLogDirs(Set.of(1)).allDescriptions().get();
    for (Map<String, LogDirDescription> byDir : dirs.values()) {
      for (LogDirDescription d : byDir.values()) {
        for (Map.Entry<TopicPartition, ReplicaInfo> e : d.replicaInfos().entrySet()) {
          sizes.put(e.getKey().toString(), e.getValue().size());
        }
      }
    }
    return sizes;
  }
}
