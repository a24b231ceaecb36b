// JVM reference for bench/bench_spark.py: decodes OffsetCommitKey (record type prefix + key) and
// OffsetCommitValue (version prefix + value, versions 0-3) into Spark rows, as a Java UDF.
// Value returns the five columns a hand-written decoder would; FullValue returns our full
// OffsetCommitValue schema (plus topicId and the tagged-field map, null: none), so both sides build the
// same rows. Compiled at bench time with javac against pyspark's jars.

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

public class DecodeOffsetCommit {
    static String string(ByteBuffer buf) {
        short n = buf.getShort();
        if (n < 0) {
            return null;
        }
        String s = new String(buf.array(), buf.position(), n, StandardCharsets.UTF_8);
        buf.position(buf.position() + n);
        return s;
    }

    public static class Key implements UDF1<byte[], Row> {
        @Override
        public Row call(byte[] bytes) {
            if (bytes == null) {
                return null;
            }
            ByteBuffer buf = ByteBuffer.wrap(bytes);
            buf.getShort();  // record type
            String group = string(buf);
            String topic = string(buf);
            int partition = buf.getInt();
            return RowFactory.create(group, topic, partition);
        }
    }

    public static class Value implements UDF1<byte[], Row> {
        @Override
        public Row call(byte[] bytes) {
            if (bytes == null) {
                return null;
            }
            ByteBuffer buf = ByteBuffer.wrap(bytes);
            short version = buf.getShort();
            long offset = buf.getLong();
            int leaderEpoch = version >= 3 ? buf.getInt() : -1;
            String metadata = string(buf);
            long commitTimestamp = buf.getLong();
            long expireTimestamp = version == 1 ? buf.getLong() : -1L;
            return RowFactory.create(offset, leaderEpoch, metadata, commitTimestamp, expireTimestamp);
        }
    }

    public static class FullValue implements UDF1<byte[], Row> {
        static final String ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA";  // Kafka's JSON form of the zero UUID

        @Override
        public Row call(byte[] bytes) {
            if (bytes == null) {
                return null;
            }
            ByteBuffer buf = ByteBuffer.wrap(bytes);
            short version = buf.getShort();
            long offset = buf.getLong();
            int leaderEpoch = version >= 3 ? buf.getInt() : -1;
            String metadata = string(buf);
            long commitTimestamp = buf.getLong();
            long expireTimestamp = version == 1 ? buf.getLong() : -1L;
            return RowFactory.create(offset, leaderEpoch, metadata, commitTimestamp, expireTimestamp,
                    ZERO_UUID, null);
        }
    }
}
