package specgen.replay;

import java.util.List;

import org.apache.kafka.common.record.CompressionType;
import org.apache.kafka.coordinator.group.ConsumerGroupMigrationPolicy;
import org.apache.kafka.coordinator.group.GroupCoordinatorConfig;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;

/** 3.8's GroupCoordinatorConfig: its constructor's arguments, at the broker's defaults. */
public final class NewGroups38 extends NewGroups {
  @Override
  protected Object config() {
    return new GroupCoordinatorConfig(
        1, // group.coordinator.threads
        10, // group.coordinator.append.linger.ms
        45_000, // group.consumer.session.timeout.ms
        5_000, // group.consumer.heartbeat.interval.ms
        Integer.MAX_VALUE, // group.consumer.max.size
        List.of(new UniformAssignor(), new RangeAssignor()), // group.consumer.assignors
        100 * 1024 * 1024, // offsets.topic.segment.bytes
        4096, // offset.metadata.max.bytes
        Integer.MAX_VALUE, // group.max.size
        3_000, // group.initial.rebalance.delay.ms
        5 * 60 * 1000, // the new member join timeout
        6_000, // group.min.session.timeout.ms
        30 * 60 * 1000, // group.max.session.timeout.ms
        600_000L, // offsets.retention.check.interval.ms
        7 * 24 * 60 * 60 * 1000L, // offsets.retention.minutes
        5_000, // offsets.commit.timeout.ms
        ConsumerGroupMigrationPolicy.DISABLED, // group.consumer.migration.policy
        CompressionType.NONE); // offsets.topic.compression.codec
  }
}
