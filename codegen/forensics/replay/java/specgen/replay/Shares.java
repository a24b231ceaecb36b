package specgen.replay;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The share coordinator (ShareCoordinatorShard, 4.0 on) loaded by the coordinator runtime. */
public final class Shares extends NewCoordinators {
  static final String PACKAGE = "org.apache.kafka.coordinator.share.";

  @Override
  protected String topic() {
    return "__share_group_state";
  }

  @Override
  protected String loaderName() {
    return "the share coordinator (its runtime's CoordinatorLoaderImpl replaying ShareCoordinatorShard)";
  }

  @Override
  protected Object builder() throws Exception {
    Object config = defaultsFromConfigDefs(Class.forName(PACKAGE + "ShareCoordinatorConfig"));
    return Class.forName(PACKAGE + "ShareCoordinatorShard$Builder").getConstructors()[0].newInstance(config);
  }

  @Override
  protected Object metrics() throws Exception {
    return Class.forName(PACKAGE + "metrics.ShareCoordinatorMetrics").getConstructor().newInstance();
  }

  @Override
  protected Object serde() throws Exception {
    return Class.forName(PACKAGE + "ShareCoordinatorRecordSerde").getConstructor().newInstance();
  }

  @Override
  protected void readBack(Object shard, int partition, Map<String, List<Map<String, Object>>> out)
      throws Exception {
    List<Map<String, Object>> states = out.computeIfAbsent("shareStates", k -> new ArrayList<>());
    for (Map.Entry<?, ?> e : ((Map<?, ?>) Kafka.field(shard, "shareStateMap")).entrySet()) {
      Object key = e.getKey();
      Object offset = e.getValue();
      Map<String, Object> s = new LinkedHashMap<>();
      s.put("groupId", Kafka.call(key, "groupId"));
      s.put("topicId", String.valueOf(Kafka.call(key, "topicId")));
      s.put("partition", Kafka.call(key, "partition"));
      s.put("coordinatorPartition", partition);
      s.put("startOffset", Kafka.call(offset, "startOffset"));
      s.put("stateEpoch", Kafka.call(offset, "stateEpoch"));
      s.put("leaderEpoch", Kafka.call(offset, "leaderEpoch"));
      s.put("stateBatches", ((List<?>) Kafka.call(offset, "stateBatches")).size());
      states.add(s);
    }
  }
}
