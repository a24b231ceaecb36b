package specgen.replay;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

import org.mockito.Mockito;
import org.mockito.invocation.InvocationOnMock;
import org.mockito.stubbing.Answer;

/**
 * What every harness needs from a release, found by name where its packages or signatures moved
 * between releases: the record classes, the broker's log and replica manager as a loader sees
 * them (Mockito stand-ins answering from a {@link PartitionLog}, as Kafka's own loader tests
 * build them), Scala's Option, and objects made with their defaults.
 */
public final class Kafka {
  private Kafka() {}

  /** A class of the record package: o.a.k.common.record (to 4.2) or its internal package. */
  public static Class<?> recordClass(String name) throws ClassNotFoundException {
    try {
      return Class.forName("org.apache.kafka.common.record.internal." + name);
    } catch (ClassNotFoundException e) {
      return Class.forName("org.apache.kafka.common.record." + name);
    }
  }

  /** The broker's log of one partition: start and end offsets, and reads one batch at a time. */
  public static Object log(Class<?> logClass, PartitionLog log) {
    Answer<Object> answer = (InvocationOnMock call) -> {
      Method m = call.getMethod();
      switch (m.getName()) {
        case "logStartOffset":
          return log.logStart;
        case "logEndOffset":
        case "highWatermark":
          return log.logEnd;
        case "read":
          long offset = ((Number) call.getArgument(0)).longValue();
          // At least the broker's default load buffer (5 MiB): how many whole batches one read
          // serves changes nothing the loaders do with them.
          int maxLength = Math.max(((Number) call.getArgument(1)).intValue(), 5 << 20);
          return fetchDataInfo(m.getReturnType(), offset, log.recordsFrom(offset, maxLength));
        case "toString":
          return "Log(" + log.topic + "-" + log.partition + ")";
        default:
          return Mockito.RETURNS_DEFAULTS.answer(call);
      }
    };
    return Mockito.mock(logClass, Mockito.withSettings().defaultAnswer(answer));
  }

  /** The log class a generic type holds: {@code Option<kafka.log.UnifiedLog>} and the like. */
  public static Class<?> innermost(java.lang.reflect.Type type) throws ClassNotFoundException {
    String name = type.getTypeName();
    int open = name.lastIndexOf('<');
    int close = name.indexOf('>', open);
    return Class.forName(name.substring(open + 1, close).trim());
  }

  /** A ReplicaManager whose getLog / getLogEndOffset answer for the partitions of {@code logs}. */
  public static Object replicaManager(Class<?> managerClass, Iterable<PartitionLog> logs)
      throws ReflectiveOperationException {
    Class<?> logClass = null;
    for (Method m : managerClass.getMethods()) {
      if (m.getName().equals("getLog") && m.getParameterCount() == 1) {
        logClass = innermost(m.getGenericReturnType());
      }
    }
    if (logClass == null) {
      throw new NoSuchMethodException(managerClass.getName() + ".getLog");
    }
    Map<String, Object> mocks = new HashMap<>();
    Map<String, Long> ends = new HashMap<>();
    for (PartitionLog log : logs) {
      mocks.put(log.topic + "-" + log.partition, log(logClass, log));
      ends.put(log.topic + "-" + log.partition, log.logEnd);
    }
    Answer<Object> answer = (InvocationOnMock call) -> {
      String name = call.getMethod().getName();
      if (name.equals("getLog") || name.equals("getLogEndOffset")) {
        String tp = call.getArgument(0).toString();
        Object found = name.equals("getLog") ? mocks.get(tp) : ends.get(tp);
        return optional(call.getMethod().getReturnType(), found);
      }
      return Mockito.RETURNS_DEFAULTS.answer(call);
    };
    return Mockito.mock(managerClass, Mockito.withSettings().defaultAnswer(answer));
  }

  /** Scala's Option or Java's Optional of {@code value}. */
  public static Object optional(Class<?> type, Object value) {
    if (type == Optional.class) {
      return Optional.ofNullable(value);
    }
    return scala.Option.apply(value);
  }

  /** The value of a Scala Option or Java Optional, or null. */
  public static Object value(Object option) {
    if (option instanceof Optional) {
      return ((Optional<?>) option).orElse(null);
    }
    if (option instanceof scala.Option) {
      scala.Option<?> o = (scala.Option<?>) option;
      return o.isDefined() ? o.get() : null;
    }
    return option;
  }

  private static final Map<Class<?>, Constructor<?>> FETCH_DATA = new java.util.concurrent.ConcurrentHashMap<>();

  static Object fetchDataInfo(Class<?> type, long offset, Object records) throws ReflectiveOperationException {
    Constructor<?> best = FETCH_DATA.get(type);
    if (best == null) {
      best = fetchDataConstructor(type, records);
      FETCH_DATA.put(type, best);
    }
    Class<?>[] p = best.getParameterTypes();
    Object[] args = new Object[p.length];
    args[0] = offsetMetadata(p[0], offset);
    args[1] = records;
    for (int i = 2; i < p.length; i++) {
      args[i] = defaultFor(p[i]);
    }
    return best.newInstance(args);
  }

  private static Constructor<?> fetchDataConstructor(Class<?> type, Object records) {
    Constructor<?> best = null;
    for (Constructor<?> c : type.getConstructors()) {
      Class<?>[] p = c.getParameterTypes();
      if (p.length >= 2 && p[1].isInstance(records)
          && (best == null || p.length < best.getParameterCount())) {
        best = c;
      }
    }
    if (best == null) {
      throw new IllegalStateException("no FetchDataInfo constructor in " + type);
    }
    return best;
  }

  private static Object offsetMetadata(Class<?> type, long offset) throws ReflectiveOperationException {
    for (Constructor<?> c : type.getConstructors()) {
      if (Arrays.equals(c.getParameterTypes(), new Class<?>[] {long.class})) {
        return c.newInstance(offset);
      }
    }
    return type.getConstructor(long.class, long.class, int.class).newInstance(offset, -1L, -1);
  }

  /** The neutral value of a type: false, 0, None, empty, the first enum constant, else null. */
  public static Object defaultFor(Class<?> t) {
    if (t == boolean.class) {
      return false;
    }
    if (t == int.class) {
      return 0;
    }
    if (t == long.class) {
      return 0L;
    }
    if (t == short.class) {
      return (short) 0;
    }
    if (t == byte.class) {
      return (byte) 0;
    }
    if (t == double.class) {
      return 0.0;
    }
    if (t == Optional.class) {
      return Optional.empty();
    }
    if (scala.Option.class.isAssignableFrom(t)) {
      return scala.None$.MODULE$;
    }
    if (t.isEnum() && t.getEnumConstants().length > 0) {
      return t.getEnumConstants()[0];
    }
    return null;
  }

  /**
   * An instance of {@code type} with its defaults: a Scala case class from its companion's
   * default arguments; otherwise its widest public constructor, each argument from
   * {@code given} (by parameter type) or {@link #defaultFor}.
   */
  public static Object withDefaults(Class<?> type, Map<Class<?>, Object> given) throws ReflectiveOperationException {
    Constructor<?>[] all = type.getConstructors();
    Arrays.sort(all, Comparator.comparingInt(Constructor::getParameterCount));
    Constructor<?> widest = all[all.length - 1];
    Class<?>[] p = widest.getParameterTypes();
    Object[] args = new Object[p.length];
    Object companion = null;
    try {
      companion = Class.forName(type.getName() + "$").getField("MODULE$").get(null);
    } catch (ClassNotFoundException | NoSuchFieldException e) {
      companion = null;
    }
    for (int i = 0; i < p.length; i++) {
      Object found = given.get(p[i]);
      if (found == null) {
        for (Map.Entry<Class<?>, Object> e : given.entrySet()) {
          if (p[i].isAssignableFrom(e.getKey())) {
            found = e.getValue();
            break;
          }
        }
      }
      if (found == null && companion != null) {
        try {
          found = companion.getClass().getMethod("$lessinit$greater$default$" + (i + 1)).invoke(companion);
        } catch (NoSuchMethodException e) {
          found = null;
        }
      }
      args[i] = found != null ? found : defaultFor(p[i]);
    }
    return widest.newInstance(args);
  }

  /** An interface whose methods do nothing (timers and executors the replay never fires). */
  @SuppressWarnings("unchecked")
  public static <T> T inert(Class<T> type) {
    return (T) Proxy.newProxyInstance(
        type.getClassLoader(), new Class<?>[] {type}, (proxy, method, args) -> {
          if (method.getName().equals("toString")) {
            return "inert " + type.getSimpleName();
          }
          if (method.getName().equals("hashCode")) {
            return System.identityHashCode(proxy);
          }
          if (method.getName().equals("equals")) {
            return proxy == args[0];
          }
          return defaultFor(method.getReturnType());
        });
  }

  /** Calls the method {@code name} whose parameters take {@code args}, whatever its access
   * (a static one when {@code target} is a class). */
  public static Object call(Object target, String name, Object... args) throws ReflectiveOperationException {
    Class<?> type = target instanceof Class ? (Class<?>) target : target.getClass();
    for (Class<?> c = type; c != null; c = c.getSuperclass()) {
      for (Method m : c.getDeclaredMethods()) {
        if (!m.getName().equals(name) || !accepts(m.getParameterTypes(), args)) {
          continue;
        }
        if (target instanceof Class && !Modifier.isStatic(m.getModifiers())) {
          continue;
        }
        m.setAccessible(true);
        return m.invoke(target instanceof Class ? null : target, args);
      }
    }
    throw new NoSuchMethodException(type.getName() + "." + name + "/" + args.length);
  }

  private static final Map<Class<?>, Class<?>> BOXES = Map.of(
      int.class, Integer.class, long.class, Long.class, short.class, Short.class,
      byte.class, Byte.class, boolean.class, Boolean.class, double.class, Double.class);

  private static boolean accepts(Class<?>[] params, Object[] args) {
    if (params.length != args.length) {
      return false;
    }
    for (int i = 0; i < params.length; i++) {
      Class<?> p = params[i].isPrimitive() ? BOXES.get(params[i]) : params[i];
      if (args[i] == null ? params[i].isPrimitive() : !p.isInstance(args[i])) {
        return false;
      }
    }
    return true;
  }

  /** A field's value by name (from the class or its superclasses), whatever its access. */
  public static Object field(Object target, String name) throws ReflectiveOperationException {
    for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
      try {
        java.lang.reflect.Field f = c.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(target);
      } catch (NoSuchFieldException e) {
        // up the hierarchy
      }
    }
    throw new NoSuchFieldException(target.getClass().getName() + "." + name);
  }
}
