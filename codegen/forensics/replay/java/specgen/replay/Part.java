package specgen.replay;

import java.util.Map;

/** One coordinator (or the metadata log) of one API generation, loaded by the release's code. */
public interface Part {
  /**
   * Loads each partition of the request through the release's own loader and reads back what
   * the release kept. The request has "partitions": [{"topic", "partition", "files"}] and
   * "options"; the answer has "partitions" (how each load ended, Kafka's log lines) and what
   * survives ("groups", "offsets", "transactions", "shareStates" or the metadata image).
   */
  Map<String, Object> run(Map<String, Object> request) throws Exception;
}
