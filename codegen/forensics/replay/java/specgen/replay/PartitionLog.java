package specgen.replay;

import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A coordinator partition's log as its segment files hold it, served to the release's loader in
 * whole batches per read, as the release's own MemoryRecords.
 */
public final class PartitionLog {
  public final String topic;
  public final int partition;
  private final ByteBuffer bytes;
  private final long[] base;
  private final long[] next;
  private final int[] position;
  private final int[] size;
  private final int batches;
  public final long logStart;
  public final long logEnd;
  private final Method readable;
  /** The last offset the loader asked for. */
  public volatile long lastRead = -1;
  /** The offset after the last batch served. */
  public volatile long lastServedEnd = -1;

  private PartitionLog(String topic, int partition, ByteBuffer bytes) throws ReflectiveOperationException {
    this.topic = topic;
    this.partition = partition;
    this.bytes = bytes;
    List<long[]> found = new ArrayList<>();
    int at = 0;
    int limit = bytes.limit();
    // A batch (any magic) starts with its base offset and length; a v2 batch holds its last
    // offset delta at byte 23, a legacy entry's offset is its last inner offset.
    while (at + 17 <= limit) {
      long baseOffset = bytes.getLong(at);
      int length = bytes.getInt(at + 8);
      int total = 12 + length;
      if (length < 0 || at + total > limit) {
        break; // a truncated tail: the log ends here, as it does for the broker
      }
      byte magic = bytes.get(at + 16);
      long last = magic >= 2 && total >= 27 ? baseOffset + bytes.getInt(at + 23) : baseOffset;
      found.add(new long[] {baseOffset, last + 1, at, total});
      at += total;
    }
    batches = found.size();
    base = new long[batches];
    next = new long[batches];
    position = new int[batches];
    size = new int[batches];
    for (int i = 0; i < batches; i++) {
      long[] b = found.get(i);
      base[i] = b[0];
      next[i] = b[1];
      position[i] = (int) b[2];
      size[i] = (int) b[3];
    }
    logStart = batches == 0 ? 0 : base[0];
    logEnd = batches == 0 ? 0 : next[batches - 1];
    readable = Kafka.recordClass("MemoryRecords").getMethod("readableRecords", ByteBuffer.class);
  }

  /** The partitions of a request: [{"topic", "partition", "files"}], files in log order. */
  @SuppressWarnings("unchecked")
  public static List<PartitionLog> of(Map<String, Object> request)
      throws IOException, ReflectiveOperationException {
    List<PartitionLog> logs = new ArrayList<>();
    for (Map<String, Object> p : (List<Map<String, Object>>) request.get("partitions")) {
      List<String> files = (List<String>) p.get("files");
      long total = 0;
      for (String f : files) {
        total += Files.size(Path.of(f));
      }
      if (total > Integer.MAX_VALUE) {
        throw new IOException(p.get("topic") + "-" + p.get("partition") + " holds over 2 GiB");
      }
      ByteBuffer all = ByteBuffer.allocate((int) total);
      for (String f : files) {
        all.put(Files.readAllBytes(Path.of(f)));
      }
      all.flip();
      logs.add(new PartitionLog(
          (String) p.get("topic"), ((Number) p.get("partition")).intValue(), all));
    }
    return logs;
  }

  /** The release's MemoryRecords of the batch holding {@code offset} (or the first after it). */
  public Object recordsFrom(long offset) throws ReflectiveOperationException {
    return recordsFrom(offset, 0);
  }

  /**
   * The release's MemoryRecords from the batch holding {@code offset} (or the first after it):
   * whole batches up to {@code maxBytes}, at least one, as the broker's log reads them.
   */
  public Object recordsFrom(long offset, int maxBytes) throws ReflectiveOperationException {
    lastRead = offset;
    int lo = 0;
    int hi = batches;
    while (lo < hi) { // the first batch whose next offset is past offset
      int mid = (lo + hi) >>> 1;
      if (next[mid] <= offset) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    ByteBuffer slice;
    if (lo >= batches) {
      slice = ByteBuffer.allocate(0);
    } else {
      int end = lo + 1;
      long taken = size[lo];
      while (end < batches && taken + size[end] <= maxBytes) {
        taken += size[end++];
      }
      lastServedEnd = next[end - 1];
      slice = bytes.duplicate();
      slice.position(position[lo]).limit(position[lo] + (int) taken);
      slice = slice.slice();
    }
    return readable.invoke(null, slice);
  }

  /** The release's MemoryRecords of the whole log, in order. */
  public Object allRecords() throws ReflectiveOperationException {
    return readable.invoke(null, bytes.duplicate());
  }

  public int batchCount() {
    return batches;
  }

  /**
   * Where a loader that does not pass offsets to its playback (3.6, 3.7) failed, from how many
   * records it had deserialized: the control batch it met after them (it refuses those), or
   * else the last of them (its read or its replay threw).
   */
  public long failedAfter(long deserialized, boolean controlBatch) throws ReflectiveOperationException {
    long seen = 0;
    for (Object batch : (Iterable<?>) Kafka.call(allRecords(), "batches")) {
      if ((Boolean) Kafka.call(batch, "isControlBatch")) {
        if (controlBatch && seen >= deserialized) {
          return ((Number) Kafka.call(batch, "baseOffset")).longValue();
        }
        continue;
      }
      for (Object record : (Iterable<?>) batch) {
        if (++seen == deserialized && !controlBatch) {
          return ((Number) Kafka.call(record, "offset")).longValue();
        }
      }
    }
    return lastRead;
  }

  public Map<String, Object> describe() {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("topic", topic);
    out.put("partition", partition);
    out.put("batches", batches);
    out.put("logStartOffset", logStart);
    out.put("logEndOffset", logEnd);
    return out;
  }
}
