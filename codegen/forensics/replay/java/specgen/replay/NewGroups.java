package specgen.replay;

import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.TopicPartition;

/**
 * The new group coordinator (GroupCoordinatorShard) loaded by the coordinator runtime, for the
 * releases whose configuration is made from its ConfigDefs (3.9: the constructor from an
 * AbstractConfig; 4.0 on: fromProps). {@link NewGroups36}, {@link NewGroups37} and
 * {@link NewGroups38} give the constructor arguments of the releases before.
 */
public class NewGroups extends NewCoordinators {
  static final String PACKAGE = "org.apache.kafka.coordinator.group.";

  @Override
  protected String topic() {
    return "__consumer_offsets";
  }

  @Override
  protected String loaderName() {
    return "the new group coordinator (its runtime's CoordinatorLoaderImpl replaying GroupCoordinatorShard)";
  }

  /** GroupCoordinatorConfig with its defaults. */
  protected Object config() throws Exception {
    Class<?> type = Class.forName(PACKAGE + "GroupCoordinatorConfig");
    try {
      return type.getMethod("fromProps", Map.class).invoke(null, Map.of());
    } catch (NoSuchMethodException e) {
      return defaultsFromConfigDefs(type);
    }
  }

  @Override
  protected Object builder() throws Exception {
    Object config = config();
    Class<?> builder = Class.forName(PACKAGE + "GroupCoordinatorShard$Builder");
    for (Constructor<?> c : builder.getConstructors()) {
      if (c.getParameterCount() == 1) {
        return c.newInstance(config);
      }
      return c.newInstance(config, groupConfigManager(config));
    }
    throw new NoSuchMethodException("GroupCoordinatorShard.Builder");
  }

  /** GroupConfigManager (4.0 on): the group configs' defaults, as the broker makes them. */
  static Object groupConfigManager(Object config) throws Exception {
    Class<?> type = Class.forName(PACKAGE + "GroupConfigManager");
    Object shareConfig = null;
    try {
      shareConfig = defaultsFromConfigDefs(
          Class.forName(PACKAGE + "modern.share.ShareGroupConfig"), config.getClass());
    } catch (ClassNotFoundException e) {
      // before 4.3 the share group config is elsewhere and not needed here
    }
    Object defaults = Map.of();
    try {
      defaults = Kafka.call(config, "extractGroupConfigMap", shareConfig);
    } catch (ReflectiveOperationException | RuntimeException e) {
      defaults = Map.of();
    }
    for (Constructor<?> c : type.getConstructors()) {
      Class<?>[] p = c.getParameterTypes();
      if (p.length == 1) {
        return c.newInstance(defaults);
      }
      if (p.length == 2) {
        return c.newInstance(config, shareConfig);
      }
      if (p.length == 3) {
        return c.newInstance(defaults, config, shareConfig);
      }
    }
    throw new NoSuchMethodException("GroupConfigManager");
  }

  @Override
  protected Object metrics() throws Exception {
    try {
      return Class.forName(PACKAGE + "metrics.GroupCoordinatorMetrics").getConstructor().newInstance();
    } catch (ClassNotFoundException e) {
      return null; // 3.6's shard takes none
    }
  }

  @Override
  protected Object serde() throws Exception {
    for (String name : new String[] {
        "GroupCoordinatorRecordSerde", "CoordinatorRecordSerde", "RecordSerde"}) {
      try {
        return Class.forName(PACKAGE + name).getConstructor().newInstance();
      } catch (ClassNotFoundException e) {
        // an older release's name
      }
    }
    throw new ClassNotFoundException("the group coordinator's record serde");
  }

  @Override
  protected void readBack(Object shard, int partition, Map<String, List<Map<String, Object>>> out)
      throws Exception {
    Object groupsManager = Kafka.field(shard, "groupMetadataManager");
    List<Map<String, Object>> groups = out.computeIfAbsent("groups", k -> new ArrayList<>());
    for (Object group : ((Map<?, ?>) Kafka.field(groupsManager, "groups")).values()) {
      Map<String, Object> g = new LinkedHashMap<>();
      g.put("groupId", Kafka.call(group, "groupId"));
      g.put("partition", partition);
      g.put("type", String.valueOf(Kafka.call(group, "type")).toLowerCase());
      g.put("state", state(group));
      g.put("members", Kafka.call(group, OldCoordinators.hasMethod(group.getClass(), "numMembers") ? "numMembers" : "size"));
      if (OldCoordinators.hasMethod(group.getClass(), "protocolType")) {
        g.put("protocolType", Kafka.value(Kafka.call(group, "protocolType")));
      }
      groups.add(g);
    }
    Object offsetsManager = Kafka.field(shard, "offsetMetadataManager");
    Object byGroup;
    try {
      byGroup = Kafka.field(Kafka.field(offsetsManager, "offsets"), "offsetsByGroup");
    } catch (NoSuchFieldException e) {
      byGroup = Kafka.field(offsetsManager, "offsetsByGroup"); // 3.6-3.8
    }
    List<Map<String, Object>> offsets = out.computeIfAbsent("offsets", k -> new ArrayList<>());
    for (Map.Entry<?, ?> g : ((Map<?, ?>) byGroup).entrySet()) {
      for (Map.Entry<?, ?> t : ((Map<?, ?>) g.getValue()).entrySet()) {
        if (t.getKey() instanceof TopicPartition) {
          TopicPartition tp = (TopicPartition) t.getKey();
          offsets.add(offset(g.getKey(), tp.topic(), tp.partition(), t.getValue()));
          continue;
        }
        for (Map.Entry<?, ?> p : ((Map<?, ?>) t.getValue()).entrySet()) {
          offsets.add(offset(g.getKey(), t.getKey(), p.getKey(), p.getValue()));
        }
      }
    }
  }

  static String state(Object group) throws ReflectiveOperationException {
    try {
      return (String) Kafka.call(group, "stateAsString");
    } catch (NoSuchMethodException e) {
      return (String) Kafka.call(group, "stateAsString", Long.MAX_VALUE);
    }
  }

  private static Map<String, Object> offset(Object group, Object topic, Object partition, Object value)
      throws ReflectiveOperationException {
    Map<String, Object> o = new LinkedHashMap<>();
    o.put("group", group);
    o.put("topic", topic);
    o.put("partition", partition);
    o.put("offset", OldCoordinators.committedOffset(value));
    return o;
  }
}
