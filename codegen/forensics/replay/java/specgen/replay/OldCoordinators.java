package specgen.replay;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.utils.Time;
import org.mockito.Mockito;

/**
 * The Scala coordinators' own load loops, for every release that has them: the old group
 * coordinator (GroupMetadataManager.loadGroupsAndOffsets, 2.8 to 4.0) and the transaction
 * coordinator (TransactionStateManager.loadTransactionMetadata, 2.8 to 4.4). Their classes kept
 * their names across releases while constructors and the log classes moved; the harness finds
 * them by name and builds each constructor's arguments by type, so one source serves them all.
 * The load runs with the release's own catch: what it logs says how it ended.
 */
public final class OldCoordinators {
  private OldCoordinators() {}

  static final String GROUPS = "__consumer_offsets";
  static final String TRANSACTIONS = "__transaction_state";

  /** Constructor arguments by type, shared by the managers of both coordinators. */
  static Map<Class<?>, Object> given(Object replicaManager) throws ReflectiveOperationException {
    Map<Class<?>, Object> given = new HashMap<>();
    given.put(int.class, 0); // broker id
    given.put(Class.forName("kafka.server.ReplicaManager"), replicaManager);
    given.put(Time.class, Time.SYSTEM);
    given.put(Metrics.class, new Metrics());
    for (String name : new String[] {
        "org.apache.kafka.server.util.Scheduler", "kafka.utils.Scheduler",
        "kafka.server.MetadataCache", "org.apache.kafka.metadata.MetadataCache"}) {
      try {
        Class<?> type = Class.forName(name);
        given.put(type, Mockito.mock(type));
      } catch (ClassNotFoundException e) {
        // not in this release
      }
    }
    try {
      Class<?> mv = Class.forName("org.apache.kafka.server.common.MetadataVersion");
      Object latest;
      try {
        latest = mv.getField("LATEST_PRODUCTION").get(null);
      } catch (NoSuchFieldException e) {
        latest = mv.getMethod("latest").invoke(null);
      }
      given.put(mv, latest);
    } catch (ClassNotFoundException e) {
      Object companion = Class.forName("kafka.api.ApiVersion$").getField("MODULE$").get(null);
      given.put(Class.forName("kafka.api.ApiVersion"), Kafka.call(companion, "latestVersion"));
    }
    for (String name : new String[] {
        "org.apache.kafka.coordinator.group.OffsetConfig", "kafka.coordinator.group.OffsetConfig",
        "org.apache.kafka.coordinator.transaction.TransactionConfig",
        "kafka.coordinator.transaction.TransactionConfig"}) {
      try {
        Class<?> type = Class.forName(name);
        given.put(type, Kafka.withDefaults(type, Map.of()));
      } catch (ClassNotFoundException e) {
        // not in this release
      }
    }
    return given;
  }

  /** Kafka's ERROR line of a load, if it logged one ("Error loading ... from"). */
  static Map<String, Object> loadError(List<Map<String, Object>> lines) {
    for (Map<String, Object> line : lines) {
      if ("ERROR".equals(line.get("level"))
          && String.valueOf(line.get("message")).contains("Error loading")) {
        return line;
      }
    }
    return null;
  }

  /**
   * The record of the last batch served that the release's own reader refuses: its offset and
   * the exception, or the batch's offset when no single record explains the failure.
   */
  static Map<String, Object> locate(PartitionLog log, Function<Object, Throwable> reader)
      throws ReflectiveOperationException {
    Map<String, Object> at = new LinkedHashMap<>();
    at.put("offset", log.lastRead);
    Object records = log.recordsFrom(log.lastRead, Integer.MAX_VALUE); // the last read, on
    for (Object batch : iterable(Kafka.call(records, "batches"))) {
      if ((Boolean) Kafka.call(batch, "isControlBatch")) {
        continue;
      }
      for (Object record : iterable(batch)) {
        Throwable refused = reader.apply(record);
        if (refused != null) {
          at.put("offset", Kafka.call(record, "offset"));
          at.put("exception", Replay.describe(refused));
          return at;
        }
      }
    }
    return at;
  }

  static Iterable<Object> iterable(Object o) {
    if (o instanceof Iterable) {
      @SuppressWarnings("unchecked")
      Iterable<Object> it = (Iterable<Object>) o;
      return it;
    }
    if (o instanceof scala.collection.Iterable) {
      @SuppressWarnings("unchecked")
      scala.collection.Iterator<Object> it = ((scala.collection.Iterable<Object>) o).iterator();
      return () -> new Iterator<Object>() {
        @Override public boolean hasNext() { return it.hasNext(); }
        @Override public Object next() { return it.next(); }
      };
    }
    throw new IllegalArgumentException("not iterable: " + o.getClass());
  }

  static Map<String, Object> partitionAnswer(PartitionLog log, List<Map<String, Object>> lines,
      Map<String, Object> failure) {
    Map<String, Object> p = log.describe();
    p.put("status", failure == null ? "loaded" : "failed");
    if (failure != null) {
      p.put("failure", failure);
    }
    p.put("log", lines);
    return p;
  }

  static Object reads(Object record, String method) throws ReflectiveOperationException {
    return Kafka.call(record, method);
  }

  static Throwable attempt(ThrowingRunnable action) {
    try {
      action.run();
      return null;
    } catch (Throwable t) {
      return Replay.unwrap(t);
    }
  }

  interface ThrowingRunnable {
    void run() throws Exception;
  }

  /** The old group coordinator: GroupMetadataManager.loadGroupsAndOffsets per partition. */
  public static final class Groups implements Part {
    @Override
    public Map<String, Object> run(Map<String, Object> request) throws Exception {
      List<PartitionLog> logs = PartitionLog.of(request);
      Class<?> managerClass = Class.forName("kafka.coordinator.group.GroupMetadataManager");
      Object companion = Class.forName("kafka.coordinator.group.GroupMetadataManager$")
          .getField("MODULE$").get(null);
      List<Map<String, Object>> partitions = new ArrayList<>();
      List<Map<String, Object>> groups = new ArrayList<>();
      List<Map<String, Object>> offsets = new ArrayList<>();
      for (PartitionLog log : logs) {
        Object replicaManager = Kafka.replicaManager(
            Class.forName("kafka.server.ReplicaManager"), List.of(log));
        Object manager = Kafka.withDefaults(managerClass, given(replicaManager));
        TopicPartition tp = new TopicPartition(log.topic, log.partition);
        Captured.take();
        load(manager, tp);
        List<Map<String, Object>> lines = Captured.take();
        Map<String, Object> failure = null;
        Map<String, Object> error = loadError(lines);
        if (error != null) {
          failure = locate(log, record -> attempt(() -> readRecord(companion, record)));
          failure.putIfAbsent("exception", error.get("exception"));
          failure.put("kafkaLog", error.get("message"));
        }
        Map<String, Object> p = partitionAnswer(log, lines, failure);
        int before = groups.size();
        for (Object group : iterable(Kafka.call(manager, "currentGroups"))) {
          groups.add(group(group, log.partition, offsets));
        }
        p.put("groups", groups.size() - before);
        if (failure != null) {
          p.put("served", "empty"); // the release's finally marks it loaded: served as empty
        }
        partitions.add(p);
        Kafka.call(manager, "shutdown");
      }
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("loader", "the old (Scala) group coordinator (GroupMetadataManager)");
      out.put("partitions", partitions);
      out.put("groups", groups);
      out.put("offsets", offsets);
      return out;
    }

    private static void load(Object manager, TopicPartition tp) throws ReflectiveOperationException {
      scala.Function1<Object, scala.runtime.BoxedUnit> onLoaded = g -> scala.runtime.BoxedUnit.UNIT;
      for (Method m : manager.getClass().getMethods()) {
        if (!m.getName().equals("loadGroupsAndOffsets")) {
          continue;
        }
        Class<?>[] p = m.getParameterTypes();
        Object[] args = new Object[p.length];
        for (int i = 0; i < p.length; i++) {
          if (p[i] == TopicPartition.class) {
            args[i] = tp;
          } else if (p[i] == int.class) {
            args[i] = 0; // coordinator epoch
          } else if (p[i] == java.lang.Long.class || p[i] == long.class) {
            args[i] = Time.SYSTEM.milliseconds();
          } else {
            args[i] = onLoaded;
          }
        }
        m.invoke(manager, args);
        return;
      }
      throw new NoSuchMethodException("GroupMetadataManager.loadGroupsAndOffsets");
    }

    /** What the load loop asks of the companion's readers, for one record. */
    private static void readRecord(Object companion, Object record) throws Exception {
      if (!(Boolean) reads(record, "hasKey")) {
        throw new IllegalArgumentException(
            "requirement failed: Group metadata/offset entry key should not be null");
      }
      Object key = Kafka.call(companion, "readMessageKey", reads(record, "key"));
      String kind = key.getClass().getSimpleName();
      if (!(Boolean) reads(record, "hasValue")) {
        return;
      }
      if (kind.equals("OffsetKey")) {
        Kafka.call(companion, "readOffsetMessageValue", reads(record, "value"));
      } else if (kind.equals("GroupMetadataKey")) {
        Object groupId = Kafka.call(key, "key");
        Kafka.call(companion, "readGroupMessageValue", groupId, reads(record, "value"), Time.SYSTEM);
      }
    }

    private static Map<String, Object> group(Object g, int partition, List<Map<String, Object>> offsets)
        throws ReflectiveOperationException {
      Map<String, Object> out = new LinkedHashMap<>();
      String groupId = (String) Kafka.call(g, "groupId");
      out.put("groupId", groupId);
      out.put("partition", partition);
      out.put("type", "classic");
      out.put("state", String.valueOf(Kafka.call(g, "currentState")));
      out.put("protocolType", Kafka.value(Kafka.call(g, "protocolType")));
      out.put("protocol", Kafka.value(Kafka.call(g, "protocolName")));
      out.put("generation", Kafka.call(g, "generationId"));
      out.put("members", Kafka.call(Kafka.call(g, "allMembers"), "size"));
      Object all = Kafka.call(g, "allOffsets");
      for (Object entry : iterable(all)) {
        scala.Tuple2<?, ?> e = (scala.Tuple2<?, ?>) entry;
        TopicPartition tp = (TopicPartition) e._1();
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("group", groupId);
        o.put("topic", tp.topic());
        o.put("partition", tp.partition());
        o.put("offset", committedOffset(e._2()));
        offsets.add(o);
      }
      return out;
    }
  }

  static Object committedOffset(Object offsetAndMetadata) throws ReflectiveOperationException {
    for (String name : new String[] {"committedOffset", "offset"}) {
      try {
        return Kafka.call(offsetAndMetadata, name);
      } catch (NoSuchMethodException e) {
        try {
          return Kafka.field(offsetAndMetadata, name);
        } catch (NoSuchFieldException f) {
          // the other name
        }
      }
    }
    throw new NoSuchMethodException("no offset in " + offsetAndMetadata.getClass());
  }

  /** The transaction coordinator: TransactionStateManager.loadTransactionMetadata per partition. */
  public static final class Transactions implements Part {
    @Override
    public Map<String, Object> run(Map<String, Object> request) throws Exception {
      List<PartitionLog> logs = PartitionLog.of(request);
      Class<?> managerClass = Class.forName("kafka.coordinator.transaction.TransactionStateManager");
      List<Map<String, Object>> partitions = new ArrayList<>();
      List<Map<String, Object>> transactions = new ArrayList<>();
      for (PartitionLog log : logs) {
        Object replicaManager = Kafka.replicaManager(
            Class.forName("kafka.server.ReplicaManager"), List.of(log));
        Object manager = Kafka.withDefaults(managerClass, given(replicaManager));
        TopicPartition tp = new TopicPartition(log.topic, log.partition);
        Captured.take();
        Kafka.call(manager, "addLoadingPartition", log.partition, 0);
        Object loaded = Kafka.call(manager, "loadTransactionMetadata", tp, 0);
        List<Map<String, Object>> lines = Captured.take();
        Map<String, Object> failure = null;
        Map<String, Object> error = loadError(lines);
        if (error != null) {
          failure = locate(log, OldCoordinators::readTransaction);
          failure.putIfAbsent("exception", error.get("exception"));
          failure.put("kafkaLog", error.get("message"));
        }
        Map<String, Object> p = partitionAnswer(log, lines, failure);
        int before = transactions.size();
        for (Map.Entry<?, ?> e : entries(loaded)) {
          transactions.add(transaction(e.getValue(), log.partition));
        }
        p.put("transactionalIds", transactions.size() - before);
        if (failure != null) {
          p.put("status", "partial"); // the loop keeps what it read before the record
        }
        partitions.add(p);
        Kafka.call(manager, "shutdown");
      }
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("loader", "the transaction coordinator (TransactionStateManager)");
      out.put("partitions", partitions);
      out.put("transactions", transactions);
      return out;
    }
  }

  /** What the load loop asks of TransactionLog for one record, or what it throws. */
  static Throwable readTransaction(Object record) {
    return attempt(() -> {
      if (!(Boolean) reads(record, "hasKey")) {
        throw new IllegalArgumentException(
            "requirement failed: Transaction state log's key should not be null");
      }
      Class<?> log;
      try {
        log = Class.forName("org.apache.kafka.coordinator.transaction.TransactionLog");
        if (hasMethod(log, "read")) {
          Kafka.call(log, "read", reads(record, "key"), reads(record, "value"));
          return;
        }
      } catch (ClassNotFoundException e) {
        // the Scala TransactionLog
      }
      Object companion = Class.forName("kafka.coordinator.transaction.TransactionLog$")
          .getField("MODULE$").get(null);
      Object key = Kafka.call(companion, "readTxnRecordKey", reads(record, "key"));
      Object id = key;
      if (key instanceof scala.util.Either) {
        scala.util.Either<?, ?> either = (scala.util.Either<?, ?>) key;
        if (either.isLeft()) {
          return;
        }
        id = either.right().get();
      } else if (key.getClass().getSimpleName().equals("UnknownKey")) {
        return;
      } else if (hasMethod(key.getClass(), "transactionalId")) {
        id = Kafka.call(key, "transactionalId");
      }
      Kafka.call(companion, "readTxnRecordValue", id, reads(record, "value"));
    });
  }

  static boolean hasMethod(Class<?> type, String name) {
    for (Method m : type.getMethods()) {
      if (m.getName().equals(name)) {
        return true;
      }
    }
    return false;
  }

  /** The entries of a Java map, or of kafka.utils.Pool (a Scala Iterable of pairs). */
  static List<Map.Entry<?, ?>> entries(Object map) {
    List<Map.Entry<?, ?>> out = new ArrayList<>();
    if (map instanceof Map) {
      out.addAll(((Map<?, ?>) map).entrySet());
      return out;
    }
    for (Object pair : iterable(map)) {
      scala.Tuple2<?, ?> t = (scala.Tuple2<?, ?>) pair;
      out.add(Map.entry(t._1(), t._2()));
    }
    return out;
  }

  static Map<String, Object> transaction(Object t, int partition) throws ReflectiveOperationException {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("transactionalId", Kafka.call(t, "transactionalId"));
    out.put("partition", partition);
    out.put("producerId", Kafka.call(t, "producerId"));
    out.put("producerEpoch", Kafka.call(t, "producerEpoch"));
    out.put("state", stateName(Kafka.call(t, "state")));
    out.put("timeoutMs", Kafka.call(t, "txnTimeoutMs"));
    List<String> partitions = new ArrayList<>();
    for (Object tp : iterable(Kafka.call(t, "topicPartitions"))) {
      partitions.add(tp.toString());
    }
    partitions.sort(null);
    out.put("partitions", partitions);
    return out;
  }

  /** A transaction state as Kafka's admin API names it (CompleteCommit, Ongoing...). */
  static String stateName(Object state) throws ReflectiveOperationException {
    for (String name : new String[] {"stateName", "name"}) {
      try {
        Object text = Kafka.call(state, name);
        if (text instanceof String && !((String) text).isEmpty()) {
          return (String) text;
        }
      } catch (NoSuchMethodException e) {
        // the other accessor
      }
    }
    return state.toString();
  }
}
