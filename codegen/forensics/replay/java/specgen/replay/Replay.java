package specgen.replay;

import java.io.File;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Replays coordinator partitions and a metadata log through one Kafka release's own loaders.
 *
 * <pre>java -cp HARNESS:RELEASE_JARS specgen.replay.Replay REQUEST.json</pre>
 *
 * The request names the release, then parts: each a harness class (a {@link Part} for this
 * release's API generation), the coordinator it loads and the segment files of each partition.
 * The answer, one JSON object on stdout, holds each part's answer beside the time the JVM took
 * to start and to replay. Nothing is written anywhere else.
 */
public final class Replay {
  private Replay() {}

  public static void main(String[] args) throws Exception {
    long started = System.nanoTime();
    long jvmStart = java.lang.management.ManagementFactory.getRuntimeMXBean().getStartTime();
    long startupMs = System.currentTimeMillis() - jvmStart;
    PrintStream out = System.out;
    // Kafka's classes print nothing to stdout, but keep the answer's stream for the answer.
    System.setOut(System.err);
    ObjectMapper json = new ObjectMapper();
    @SuppressWarnings("unchecked")
    Map<String, Object> request = json.readValue(new File(args[0]), Map.class);
    Map<String, Object> answer = new LinkedHashMap<>();
    answer.put("release", request.get("release"));
    answer.put("java", System.getProperty("java.version"));
    answer.put("jvmStartupMs", startupMs);
    List<Map<String, Object>> parts = new ArrayList<>();
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> asked = (List<Map<String, Object>>) request.get("parts");
    for (Map<String, Object> part : asked) {
      long partStarted = System.nanoTime();
      Map<String, Object> result = new LinkedHashMap<>();
      result.put("coordinator", part.get("coordinator"));
      result.put("harness", part.get("harness"));
      try {
        Part harness = (Part) Class.forName((String) part.get("harness"))
            .getDeclaredConstructor().newInstance();
        result.putAll(harness.run(part));
      } catch (Throwable t) {
        // The harness itself could not run (not Kafka refusing a record): said as such.
        result.put("harnessError", describe(unwrap(t)));
        result.put("harnessStackTrace", Captured.stackTrace(unwrap(t)));
      }
      result.put("millis", (System.nanoTime() - partStarted) / 1_000_000);
      parts.add(result);
    }
    answer.put("parts", parts);
    answer.put("replayMs", (System.nanoTime() - started) / 1_000_000);
    out.println(json.writeValueAsString(answer));
    out.flush();
    // The loaders' schedulers and Kafka's metrics threads are not daemons.
    System.exit(0);
  }

  /** The cause Kafka threw, through the wrappers of reflection and futures. */
  public static Throwable unwrap(Throwable t) {
    while ((t instanceof InvocationTargetException
            || t instanceof ExecutionException
            || t instanceof CompletionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  /** "Class: message", then each cause as "caused by Class: message". */
  public static String describe(Throwable t) {
    StringBuilder text = new StringBuilder(t.getClass().getName() + ": " + t.getMessage());
    Throwable cause = t.getCause();
    int depth = 0;
    while (cause != null && cause != t && depth++ < 8) {
      text.append("; caused by ").append(cause.getClass().getName()).append(": ")
          .append(cause.getMessage());
      t = cause;
      cause = cause.getCause();
    }
    return text.toString();
  }
}
