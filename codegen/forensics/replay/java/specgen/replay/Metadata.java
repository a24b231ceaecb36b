package specgen.replay;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The metadata log as a KRaft node of the release loads it (3.3 on): every record of the latest
 * snapshot, then of the log after it, read by the release's MetadataRecordSerde (a record it
 * cannot read throws MetadataParseException: the node stops), then replayed into its
 * MetadataDelta (how a broker builds its image; FeatureLevelRecord of an unknown level throws
 * there). The request's partition lists the files in that order, with "startOffset": the
 * snapshot's end, below which log records are not loaded.
 */
public final class Metadata implements Part {
  @Override
  @SuppressWarnings("unchecked")
  public Map<String, Object> run(Map<String, Object> request) throws Exception {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("loader", "the metadata loader (MetadataRecordSerde, MetadataDelta)");
    List<Map<String, Object>> partitions = new ArrayList<>();
    List<Map<String, Object>> asked = (List<Map<String, Object>>) request.get("partitions");
    Object serde = serde();
    Class<?> accessorClass = Class.forName("org.apache.kafka.common.protocol.ByteBufferAccessor");
    Object delta = delta();
    for (Map<String, Object> p : asked) {
      long start = ((Number) p.getOrDefault("startOffset", 0)).longValue();
      List<String> files = (List<String>) p.get("files");
      Map<String, Object> answer = new LinkedHashMap<>();
      answer.put("topic", p.get("topic"));
      answer.put("partition", p.get("partition"));
      List<Map<String, Object>> replayErrors = new ArrayList<>();
      long records = 0;
      Captured.take();
      fileLoop:
      for (String file : files) {
        boolean snapshot = file.endsWith(".checkpoint");
        Map<String, Object> one = new LinkedHashMap<>(p);
        one.put("files", List.of(file));
        one.put("partitions", null);
        PartitionLog log = PartitionLog.of(Map.of("partitions", List.of(one))).get(0);
        for (Object batch : OldCoordinators.iterable(Kafka.call(log.allRecords(), "batches"))) {
          if ((Boolean) Kafka.call(batch, "isControlBatch")) {
            continue;
          }
          for (Object record : OldCoordinators.iterable(batch)) {
            long offset = (Long) Kafka.call(record, "offset");
            if (!snapshot && offset < start) {
              continue;
            }
            records++;
            java.nio.ByteBuffer value = (java.nio.ByteBuffer) Kafka.call(record, "value");
            int size = value.remaining();
            Object message;
            try {
              Object accessor = accessorClass.getConstructor(java.nio.ByteBuffer.class).newInstance(value);
              Object read = Kafka.call(serde, "read", accessor, size);
              message = Kafka.call(read, "message");
            } catch (Throwable t) {
              Map<String, Object> failure = new LinkedHashMap<>();
              failure.put("file", file);
              failure.put("offset", offset);
              failure.put("exception", Replay.describe(Replay.unwrap(t)));
              answer.put("status", "failed");
              answer.put("failure", failure);
              break fileLoop;
            }
            if (message.getClass().getSimpleName().matches("(Begin|End|Abort)TransactionRecord")) {
              continue; // the metadata batch loader consumes these; they never reach the delta
            }
            Throwable refused = OldCoordinators.attempt(() -> Kafka.call(delta, "replay", message));
            if (refused != null && replayErrors.size() < 20) {
              Map<String, Object> e = new LinkedHashMap<>();
              e.put("file", file);
              e.put("offset", offset);
              e.put("record", message.getClass().getSimpleName());
              e.put("exception", Replay.describe(refused));
              replayErrors.add(e);
            }
          }
        }
      }
      answer.putIfAbsent("status", "loaded");
      answer.put("records", records);
      answer.put("replayErrors", replayErrors);
      if ("loaded".equals(answer.get("status"))) {
        answer.putAll(image(delta));
      }
      answer.put("log", Captured.take());
      partitions.add(answer);
    }
    out.put("partitions", partitions);
    return out;
  }

  private static Object serde() throws ReflectiveOperationException {
    Class<?> type = Class.forName("org.apache.kafka.metadata.MetadataRecordSerde");
    try {
      return type.getField("INSTANCE").get(null);
    } catch (NoSuchFieldException e) {
      return type.getConstructor().newInstance();
    }
  }

  private static Object delta() throws ReflectiveOperationException {
    Class<?> image = Class.forName("org.apache.kafka.image.MetadataImage");
    Object empty = image.getField("EMPTY").get(null);
    Class<?> delta = Class.forName("org.apache.kafka.image.MetadataDelta");
    try {
      return delta.getConstructor(image).newInstance(empty);
    } catch (NoSuchMethodException e) {
      Object builder = Class.forName("org.apache.kafka.image.MetadataDelta$Builder").getConstructor().newInstance();
      Kafka.call(builder, "setImage", empty);
      return Kafka.call(builder, "build");
    }
  }

  /** The metadata.version and finalized features of the image the delta makes. */
  private static Map<String, Object> image(Object delta) {
    Map<String, Object> out = new LinkedHashMap<>();
    try {
      Object image;
      try {
        Class<?> provenance = Class.forName("org.apache.kafka.image.MetadataProvenance");
        image = Kafka.call(delta, "apply", provenance.getField("EMPTY").get(null));
      } catch (ClassNotFoundException e) {
        image = Kafka.call(delta, "apply"); // 3.3
      }
      Object features = Kafka.call(image, "features");
      Object mv = Kafka.value(Kafka.call(features, "metadataVersion"));
      out.put("metadataVersion", mv == null ? null : String.valueOf(mv));
      Object finalized = Kafka.call(features, "finalizedVersions");
      out.put("features", String.valueOf(finalized));
    } catch (Throwable t) {
      out.put("imageError", Replay.describe(Replay.unwrap(t)));
    }
    return out;
  }
}
