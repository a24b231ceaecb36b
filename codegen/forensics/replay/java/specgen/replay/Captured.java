package specgen.replay;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.slf4j.Logger;
import org.slf4j.helpers.FormattingTuple;
import org.slf4j.helpers.MarkerIgnoringBase;
import org.slf4j.helpers.MessageFormatter;

/** Kafka's WARN and ERROR log lines since the last {@link #take()}, in order. */
public final class Captured {
  private static final List<Map<String, Object>> LINES = new ArrayList<>();

  private Captured() {}

  public static synchronized List<Map<String, Object>> take() {
    List<Map<String, Object>> out = new ArrayList<>(LINES);
    LINES.clear();
    return out;
  }

  static synchronized void add(String level, String logger, String message, Throwable t) {
    Map<String, Object> line = new LinkedHashMap<>();
    line.put("level", level);
    line.put("logger", logger);
    line.put("message", message);
    if (t != null) {
      line.put("exception", Replay.describe(t));
    }
    LINES.add(line);
  }

  public static Logger logger(String name) {
    return new CaptureLogger(name);
  }

  static String stackTrace(Throwable t) {
    StringWriter out = new StringWriter();
    t.printStackTrace(new PrintWriter(out));
    return out.toString();
  }

  /** Keeps WARN and ERROR; TRACE, DEBUG and INFO are off. */
  private static final class CaptureLogger extends MarkerIgnoringBase {
    private static final long serialVersionUID = 1L;

    CaptureLogger(String name) {
      this.name = name;
    }

    private void log(String level, String format, Object... args) {
      FormattingTuple tuple = MessageFormatter.arrayFormat(format, args);
      add(level, name, tuple.getMessage(), tuple.getThrowable());
    }

    @Override public boolean isTraceEnabled() { return false; }
    @Override public void trace(String msg) {}
    @Override public void trace(String format, Object arg) {}
    @Override public void trace(String format, Object arg1, Object arg2) {}
    @Override public void trace(String format, Object... arguments) {}
    @Override public void trace(String msg, Throwable t) {}
    @Override public boolean isDebugEnabled() { return false; }
    @Override public void debug(String msg) {}
    @Override public void debug(String format, Object arg) {}
    @Override public void debug(String format, Object arg1, Object arg2) {}
    @Override public void debug(String format, Object... arguments) {}
    @Override public void debug(String msg, Throwable t) {}
    @Override public boolean isInfoEnabled() { return false; }
    @Override public void info(String msg) {}
    @Override public void info(String format, Object arg) {}
    @Override public void info(String format, Object arg1, Object arg2) {}
    @Override public void info(String format, Object... arguments) {}
    @Override public void info(String msg, Throwable t) {}
    @Override public boolean isWarnEnabled() { return true; }
    @Override public void warn(String msg) { add("WARN", name, msg, null); }
    @Override public void warn(String format, Object arg) { log("WARN", format, arg); }
    @Override public void warn(String format, Object arg1, Object arg2) { log("WARN", format, arg1, arg2); }
    @Override public void warn(String format, Object... arguments) { log("WARN", format, arguments); }
    @Override public void warn(String msg, Throwable t) { add("WARN", name, msg, t); }
    @Override public boolean isErrorEnabled() { return true; }
    @Override public void error(String msg) { add("ERROR", name, msg, null); }
    @Override public void error(String format, Object arg) { log("ERROR", format, arg); }
    @Override public void error(String format, Object arg1, Object arg2) { log("ERROR", format, arg1, arg2); }
    @Override public void error(String format, Object... arguments) { log("ERROR", format, arguments); }
    @Override public void error(String msg, Throwable t) { add("ERROR", name, msg, t); }
  }
}
