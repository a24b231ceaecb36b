package specgen.replay;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;

/**
 * The coordinator runtime's load path, as a broker runs it: the release's CoordinatorLoaderImpl
 * reads the partition (Scala in core up to 4.1, Java in coordinator-common from 4.2) and replays
 * each record into the release's shard through its SnapshottableCoordinator (3.7 on; 3.6 replays
 * into the shard), then the shard's onLoaded. The shard is built by its own Builder; each
 * generation's harness gives what its constructors need ({@link #config}, {@link #builder},
 * {@link #metrics}, {@link #serde}); the rest is found by name and type, as it moved.
 */
public abstract class NewCoordinators implements Part {
  private static final Pattern OFFSET = Pattern.compile("offset[= ](\\d+)");

  /** The topic this coordinator loads. */
  protected abstract String topic();

  /** The shard's Builder, with its configuration. */
  protected abstract Object builder() throws Exception;

  /** The metrics object the shard's Builder checks the type of, or null. */
  protected abstract Object metrics() throws Exception;

  /** The release's serde of this coordinator's records. */
  protected abstract Object serde() throws Exception;

  /** Names the code in the answer. */
  protected abstract String loaderName();

  /** What the loaded shard holds, added to the answer. */
  protected abstract void readBack(Object shard, int partition, Map<String, List<Map<String, Object>>> out)
      throws Exception;

  @Override
  public Map<String, Object> run(Map<String, Object> request) throws Exception {
    long read = System.nanoTime();
    List<PartitionLog> logs = PartitionLog.of(request);
    long readMs = (System.nanoTime() - read) / 1_000_000;
    List<Map<String, Object>> partitions = new ArrayList<>();
    Map<String, List<Map<String, Object>>> state = new LinkedHashMap<>();
    for (PartitionLog log : logs) {
      long started = System.nanoTime();
      Map<String, Object> p = load(log, state);
      p.put("millis", (System.nanoTime() - started) / 1_000_000);
      partitions.add(p);
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("loader", loaderName());
    out.put("readMillis", readMs);
    out.put("partitions", partitions);
    out.putAll(state);
    return out;
  }

  private Map<String, Object> load(PartitionLog log, Map<String, List<Map<String, Object>>> state)
      throws Exception {
    TopicPartition tp = new TopicPartition(log.topic, log.partition);
    Object logContext = logContext();
    Class<?> registryClass = Class.forName("org.apache.kafka.timeline.SnapshotRegistry");
    Object registry = registryClass.getConstructor(logContext.getClass()).newInstance(logContext);
    Map<Class<?>, Object> given = new HashMap<>();
    given.put(logContext.getClass(), logContext);
    given.put(registryClass, registry);
    given.put(Time.class, Time.SYSTEM);
    given.put(TopicPartition.class, tp);
    Object metrics = metrics();
    Object builder = builder();
    for (Method m : builder.getClass().getMethods()) {
      if (!m.getName().startsWith("with") || m.getParameterCount() != 1) {
        continue;
      }
      Class<?> p = m.getParameterTypes()[0];
      Object arg = given.get(p);
      if (arg == null && p == Optional.class) {
        arg = Optional.empty(); // no authorizer
      } else if (arg == null && metrics != null && p.isInstance(metrics)) {
        arg = metrics;
      } else if (arg == null && p.isInterface()) {
        arg = Kafka.inert(p); // timer, executor: the replay fires none
      }
      if (arg != null) {
        m.invoke(builder, arg);
      }
    }
    Object shard = Kafka.call(builder, "build");
    Object target = shard;
    Class<?> playbackClass = runtimeClass("CoordinatorPlayback");
    try {
      Class<?> snapshottable = runtimeClass("SnapshottableCoordinator");
      Constructor<?> make = snapshottable.getDeclaredConstructors()[0];
      make.setAccessible(true); // package-private before 4.2
      target = make.newInstance(logContext, registry, shard, tp);
    } catch (ClassNotFoundException e) {
      // 3.6: the loader replays into the shard itself
    }
    long[] lastReplayed = {-1};
    long[] deserialized = {0};
    Object playback = playback(playbackClass, target, lastReplayed);
    Object loader = loader(log, deserialized);
    Captured.take();
    Map<String, Object> p = log.describe();
    try {
      CompletableFuture<?> loaded = (CompletableFuture<?>) Kafka.call(loader, "load", tp, playback);
      Object summary = loaded.get(10, TimeUnit.MINUTES);
      p.put("status", "loaded");
      p.put("summary", String.valueOf(summary));
      onLoaded(shard);
    } catch (java.util.concurrent.ExecutionException e) {
      Throwable t = Replay.unwrap(e);
      Map<String, Object> failure = new LinkedHashMap<>();
      failure.put("offset", failedOffset(t, log, lastReplayed[0], deserialized[0]));
      failure.put("exception", Replay.describe(t));
      p.put("status", "failed");
      p.put("failure", failure);
      p.put("served", "no"); // the runtime marks the partition FAILED and does not serve it
    } finally {
      Kafka.call(loader, "close");
    }
    p.put("log", Captured.take());
    if ("loaded".equals(p.get("status"))) {
      readBack(shard, log.partition, state);
    }
    return p;
  }

  /** The offset of the record the load failed on: named in Kafka's message (the record, or
   * "at offset N"), else the one being replayed (3.8 on pass it), else found from the records
   * deserialized so far (3.6, 3.7). */
  private static long failedOffset(Throwable t, PartitionLog log, long lastReplayed, long deserialized)
      throws ReflectiveOperationException {
    boolean control = false;
    for (Throwable c = t; c != null; c = c.getCause()) {
      String message = String.valueOf(c.getMessage());
      Matcher m = OFFSET.matcher(message);
      if (m.find()) {
        return Long.parseLong(m.group(1));
      }
      control |= message.contains("Control batches are not supported");
      if (c.getCause() == c) {
        break;
      }
    }
    if (lastReplayed >= 0 && !control) {
      return lastReplayed;
    }
    return log.failedAfter(deserialized, control);
  }

  private static void onLoaded(Object shard) throws ReflectiveOperationException {
    for (Method m : shard.getClass().getMethods()) {
      if (m.getName().equals("onLoaded") && m.getParameterCount() == 1) {
        Class<?> image = m.getParameterTypes()[0];
        m.invoke(shard, image.getField("EMPTY").get(null));
        return;
      }
    }
  }

  /** The coordinator runtime's package: the group coordinator's (to 3.9) or coordinator-common. */
  static Class<?> runtimeClass(String name) throws ClassNotFoundException {
    try {
      return Class.forName("org.apache.kafka.coordinator.common.runtime." + name);
    } catch (ClassNotFoundException e) {
      return Class.forName("org.apache.kafka.coordinator.group.runtime." + name);
    }
  }

  static Object logContext() throws ReflectiveOperationException {
    try {
      return Class.forName("org.apache.kafka.common.utils.internals.LogContext").getConstructor().newInstance();
    } catch (ClassNotFoundException e) {
      return Class.forName("org.apache.kafka.common.utils.LogContext").getConstructor().newInstance();
    }
  }

  /** The loader's deserializer, counting the records it is given (each data record, in log
   * order, skipped or not). */
  private static Object counting(Class<?> type, Object serde, long[] count) {
    return Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (proxy, method, args) -> {
      if (method.getName().equals("deserialize")) {
        count[0]++;
      }
      if (method.getDeclaringClass() == Object.class && method.getName().equals("toString")) {
        return "deserializer";
      }
      try {
        return method.invoke(serde, args);
      } catch (java.lang.reflect.InvocationTargetException e) {
        throw e.getCause(); // Kafka's own exception, as the loader would see it
      }
    });
  }

  /** The playback the loader replays into, forwarding to {@code target} and noting each
   * replayed offset (3.8 on pass it first). */
  private static Object playback(Class<?> type, Object target, long[] lastReplayed) {
    return Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (proxy, method, args) -> {
      if (method.getName().equals("replay") && args != null && args.length == 4) {
        lastReplayed[0] = ((Number) args[0]).longValue();
      }
      if (method.getDeclaringClass() == Object.class) {
        return method.getName().equals("toString") ? "playback" : method.invoke(target, args);
      }
      try {
        return Kafka.call(target, method.getName(), args == null ? new Object[0] : args);
      } catch (java.lang.reflect.InvocationTargetException e) {
        throw e.getCause(); // Kafka's own exception, as the loader would see it
      }
    });
  }

  /** The release's CoordinatorLoaderImpl over {@code log}. */
  private Object loader(PartitionLog log, long[] deserialized) throws Exception {
    Class<?> type;
    try {
      type = Class.forName("org.apache.kafka.coordinator.common.runtime.CoordinatorLoaderImpl");
    } catch (ClassNotFoundException e) {
      type = Class.forName("kafka.coordinator.group.CoordinatorLoaderImpl");
    }
    Object serde = serde();
    Constructor<?> c = type.getConstructors()[0];
    Class<?>[] p = c.getParameterTypes();
    Type[] generic = c.getGenericParameterTypes();
    Object[] args = new Object[p.length];
    for (int i = 0; i < p.length; i++) {
      if (p[i] == Time.class) {
        args[i] = Time.SYSTEM;
      } else if (p[i].isInstance(serde) && p[i].isInterface()) {
        args[i] = counting(p[i], serde, deserialized);
      } else if (p[i].isInstance(serde)) {
        args[i] = serde;
      } else if (p[i] == int.class) {
        args[i] = 16 * 1024 * 1024; // the load buffer
      } else if (p[i] == long.class) {
        args[i] = 16384L; // commit interval (4.3 on): the runtime's default
      } else if (p[i] == Function.class && generic[i].getTypeName().contains("Log>")) {
        Object mock = Kafka.log(Kafka.innermost(generic[i]), log);
        args[i] = (Function<Object, Object>) tp -> Optional.of(mock);
      } else if (p[i] == Function.class) {
        args[i] = (Function<Object, Object>) tp -> Optional.of(log.logEnd);
      } else if (p[i].getName().equals("kafka.server.ReplicaManager")) {
        args[i] = Kafka.replicaManager(p[i], List.of(log));
      } else {
        args[i] = Kafka.defaultFor(p[i]);
      }
    }
    return c.newInstance(args);
  }

  /** A configuration class made from its own ConfigDefs (and those of {@code more}) and no
   * properties: its defaults. */
  static Object defaultsFromConfigDefs(Class<?> type, Class<?>... more) throws ReflectiveOperationException {
    Class<?> defClass = Class.forName("org.apache.kafka.common.config.ConfigDef");
    Object merged = defClass.getConstructor().newInstance();
    List<java.lang.reflect.Field> fields = new ArrayList<>(List.of(type.getFields()));
    for (Class<?> other : more) {
      fields.addAll(List.of(other.getFields()));
    }
    for (java.lang.reflect.Field f : fields) {
      if (f.getType() == defClass && java.lang.reflect.Modifier.isStatic(f.getModifiers())) {
        Object def = f.get(null);
        @SuppressWarnings("unchecked")
        Map<String, Object> keys = (Map<String, Object>) Kafka.call(def, "configKeys");
        @SuppressWarnings("unchecked")
        Map<String, Object> have = (Map<String, Object>) Kafka.call(merged, "configKeys");
        for (Object key : keys.values()) {
          if (!have.containsKey((String) Kafka.field(key, "name"))) {
            Kafka.call(merged, "define", key);
          }
        }
      }
    }
    Class<?> abstractConfig = Class.forName("org.apache.kafka.common.config.AbstractConfig");
    Object config = abstractConfig.getConstructor(defClass, Map.class).newInstance(merged, Map.of());
    return type.getConstructor(abstractConfig).newInstance(config);
  }
}
