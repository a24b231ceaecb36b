package org.apache.kafka.common.utils;

/**
 * Kafka 4.4.0 moved LogContext to org.apache.kafka.common.utils.internals; the 4.3.1
 * LocalTieredStorage (the remote storage manager of the tiered broker test) still names it
 * here. This class forwards to the moved one.
 */
public class LogContext extends org.apache.kafka.common.utils.internals.LogContext {
  public LogContext(String logPrefix) {
    super(logPrefix);
  }

  public LogContext() {
    super();
  }
}
