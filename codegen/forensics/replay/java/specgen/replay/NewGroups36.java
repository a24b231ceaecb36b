package specgen.replay;

import java.util.List;

import org.apache.kafka.coordinator.group.GroupCoordinatorConfig;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;

/** 3.6's GroupCoordinatorConfig: its constructor's arguments, at the broker's defaults. */
public final class NewGroups36 extends NewGroups {
  @Override
  protected Object config() {
    return new GroupCoordinatorConfig(
        1, // group.coordinator.threads
        45_000, // group.consumer.session.timeout.ms
        5_000, // group.consumer.heartbeat.interval.ms
        Integer.MAX_VALUE, // group.consumer.max.size
        List.of(new RangeAssignor()), // group.consumer.assignors
        100 * 1024 * 1024, // offsets.topic.segment.bytes
        4096, // offset.metadata.max.bytes
        Integer.MAX_VALUE, // group.max.size
        3_000, // group.initial.rebalance.delay.ms
        5 * 60 * 1000, // the new member join timeout
        6_000, // group.min.session.timeout.ms
        30 * 60 * 1000); // group.max.session.timeout.ms
  }
}
