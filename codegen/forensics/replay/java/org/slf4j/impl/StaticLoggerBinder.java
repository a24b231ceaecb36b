// The slf4j 1.7 binding of the replay harness: Kafka's own warnings and errors while it loads a
// partition are kept (specgen.replay.Captured) and reported with the replay's answer, exactly as
// the release would log them. slf4j finds this class by name on the class path.
package org.slf4j.impl;

import org.slf4j.ILoggerFactory;
import org.slf4j.spi.LoggerFactoryBinder;

import specgen.replay.Captured;

public final class StaticLoggerBinder implements LoggerFactoryBinder {
  public static String REQUESTED_API_VERSION = "1.7.30";

  private static final StaticLoggerBinder SINGLETON = new StaticLoggerBinder();

  public static StaticLoggerBinder getSingleton() {
    return SINGLETON;
  }

  @Override
  public ILoggerFactory getLoggerFactory() {
    return Captured::logger;
  }

  @Override
  public String getLoggerFactoryClassStr() {
    return Captured.class.getName();
  }
}
