/*
 * Reference oracle for the differential tests: a long-lived process that answers encode/decode
 * requests with Apache Kafka's own generated message classes, JSON converters and serdes.
 *
 * Protocol: one JSON object per line on stdin, one JSON object per line on stdout, in order.
 * Every request may carry an "id", which is echoed back. Every response has "ok"; failures carry
 * "error" ("<SimpleExceptionClass>: <message>") and "exception" (the fully qualified class).
 *
 *   {"op":"info"}
 *   {"op":"classes"}
 *   {"op":"encode","class":C,"version":V,"json":{...}}
 *   {"op":"decode","class":C,"version":V,"hex":H}
 *   {"op":"roundtrip","class":C,"version":V,"hex":H}
 *   {"op":"coordinator","serde":"group"|"share"|"transaction","key":H,"value":H|null}
 *   {"op":"metadata","hex":H}
 *   {"op":"remoteLogMetadata","hex":H}   (RemoteLogMetadataSerde: the record and its toString)
 *   {"op":"dumplog","args":[...]}   (DumpLogSegments from -Doracle.dumplog.jars=<dir>)
 *
 * stdin is drained by its own thread into an unbounded queue, so a client may write any number
 * of requests before it reads a single response without either side blocking. Responses are
 * flushed whenever no further request is waiting.
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.metadata.MetadataJsonConverters;
import org.apache.kafka.common.metadata.MetadataRecordType;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.Readable;
import org.apache.kafka.common.utils.internals.Exit;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.share.ShareCoordinatorRecordSerde;
import org.apache.kafka.coordinator.transaction.TransactionCoordinatorRecordSerde;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;

import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Modifier;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

public final class OracleHarness {

    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final MethodHandles.Lookup LOOKUP = MethodHandles.publicLookup();
    private static final String END = new String("<end of input>");

    /** Reflective entry points of one generated message class. */
    private static final class MessageClass {
        final Class<?> type;
        final MethodHandle construct; // new X(Readable, short)
        final MethodHandle fromJson;  // XJsonConverter.read(JsonNode, short)
        final MethodHandle toJson;    // XJsonConverter.write(X, short, boolean)

        MessageClass(Class<?> type, Class<?> converter) throws ReflectiveOperationException {
            this.type = type;
            this.construct = LOOKUP.findConstructor(type,
                    MethodType.methodType(void.class, Readable.class, short.class))
                .asType(MethodType.methodType(Message.class, Readable.class, short.class));
            this.fromJson = LOOKUP.findStatic(converter, "read",
                    MethodType.methodType(type, JsonNode.class, short.class))
                .asType(MethodType.methodType(Message.class, JsonNode.class, short.class));
            this.toJson = LOOKUP.findStatic(converter, "write",
                    MethodType.methodType(JsonNode.class, type, short.class, boolean.class))
                .asType(MethodType.methodType(JsonNode.class, Message.class, short.class, boolean.class));
        }
    }

    /** A request failed in a way that is reported verbatim (not a Kafka exception). */
    private static final class HarnessException extends RuntimeException {
        HarnessException(String message) {
            super(message);
        }
    }

    /** Thrown instead of terminating the JVM when Kafka code calls Exit.exit. */
    private static final class ExitCalled extends RuntimeException {
        final int status;

        ExitCalled(int status, String message) {
            super(message == null ? "exit " + status : message);
            this.status = status;
        }
    }

    private final Map<String, MessageClass> byName = new ConcurrentHashMap<>();
    private final Map<String, CoordinatorRecordSerde> coordinatorSerdes = Map.of(
        "group", new GroupCoordinatorRecordSerde(),
        "share", new ShareCoordinatorRecordSerde(),
        "transaction", new TransactionCoordinatorRecordSerde());
    /** simple name -> fully qualified names; built on first use. */
    private volatile Map<String, List<String>> index;
    private volatile Map<String, String> indexJars;

    private OracleHarness() {
    }

    public static void main(String[] args) throws Exception {
        // Keep the protocol stream to ourselves: anything Kafka prints goes to stderr.
        OutputStream raw = new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16);
        System.setOut(System.err);
        Exit.setExitProcedure((status, message) -> {
            throw new ExitCalled(status, message);
        });
        Exit.setHaltProcedure((status, message) -> {
            throw new ExitCalled(status, message);
        });

        BlockingQueue<String> queue = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> drain(System.in, queue), "oracle-stdin");
        reader.setDaemon(true);
        reader.start();

        new OracleHarness().serve(queue, raw);
    }

    private static void drain(InputStream in, BlockingQueue<String> queue) {
        try (BufferedReader lines = new BufferedReader(
                new InputStreamReader(in, StandardCharsets.UTF_8), 1 << 16)) {
            String line;
            while ((line = lines.readLine()) != null) {
                if (!line.isBlank()) {
                    queue.add(line);
                }
            }
        } catch (IOException e) {
            System.err.println("oracle: reading stdin failed: " + e);
        } finally {
            queue.add(END);
        }
    }

    private void serve(BlockingQueue<String> queue, OutputStream raw) throws Exception {
        while (true) {
            String line = queue.take();
            if (line == END) {
                break;
            }
            raw.write(MAPPER.writeValueAsBytes(handleLine(line)));
            raw.write('\n');
            if (queue.isEmpty()) {
                raw.flush();
            }
        }
        raw.flush();
    }

    private ObjectNode handleLine(String line) {
        JsonNode id = null;
        try {
            JsonNode request = MAPPER.readTree(line);
            if (request == null || !request.isObject()) {
                throw new HarnessException("a request must be a JSON object");
            }
            id = request.get("id");
            ObjectNode response = handle(request);
            return withId(response, id);
        } catch (Throwable t) {
            return withId(failure(t), id);
        }
    }

    private static ObjectNode withId(ObjectNode response, JsonNode id) {
        if (id == null) {
            return response;
        }
        ObjectNode out = NODES.objectNode();
        out.set("id", id);
        out.setAll(response);
        return out;
    }

    private ObjectNode handle(JsonNode request) throws Throwable {
        String op = text(request, "op");
        switch (op) {
            case "info":
                return info();
            case "classes":
                return classes();
            case "encode": {
                MessageClass mc = resolve(text(request, "class"));
                short version = version(request);
                JsonNode json = request.get("json");
                if (json == null) {
                    throw new HarnessException("missing field 'json'");
                }
                Message message = (Message) mc.fromJson.invokeExact(json, version);
                return ok().put("hex", hex(serialize(message, version)));
            }
            case "decode": {
                MessageClass mc = resolve(text(request, "class"));
                short version = version(request);
                Message message = parse(mc, unhex(text(request, "hex")), version);
                ObjectNode out = ok();
                out.set("json", (JsonNode) mc.toJson.invokeExact(message, version, true));
                return out;
            }
            case "roundtrip": {
                MessageClass mc = resolve(text(request, "class"));
                short version = version(request);
                Message message = parse(mc, unhex(text(request, "hex")), version);
                return ok().put("hex", hex(serialize(message, version)));
            }
            case "coordinator":
                return coordinator(request);
            case "metadata":
                return metadata(unhex(text(request, "hex")));
            case "remoteLogMetadata":
                return remoteLogMetadata(unhex(text(request, "hex")));
            case "dumplog":
                return dumpLog(request);
            default:
                throw new HarnessException("unknown op '" + op + "'");
        }
    }

    // ----------------------------------------------------------------------------- messages

    private static byte[] serialize(Message message, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = message.size(cache, version);
        ByteBuffer buffer = ByteBuffer.allocate(size);
        message.write(new ByteBufferAccessor(buffer), cache, version);
        if (buffer.position() != size) {
            throw new HarnessException("wrote " + buffer.position() + " bytes but size() said " + size);
        }
        return buffer.array();
    }

    private static Message parse(MessageClass mc, byte[] data, short version) throws Throwable {
        ByteBufferAccessor accessor = new ByteBufferAccessor(ByteBuffer.wrap(data));
        Message message = (Message) mc.construct.invokeExact((Readable) accessor, version);
        int left = accessor.remaining();
        if (left != 0) {
            throw new HarnessException(left + " byte(s) left over after reading "
                + mc.type.getSimpleName() + " version " + version + " (" + (data.length - left)
                + " of " + data.length + " consumed)");
        }
        return message;
    }

    private MessageClass resolve(String name) throws ReflectiveOperationException, IOException {
        MessageClass found = byName.get(name);
        if (found != null) {
            return found;
        }
        String fqcn = name;
        if (name.indexOf('.') < 0) {
            List<String> candidates = index().get(name);
            if (candidates == null) {
                throw new HarnessException("no generated message class named '" + name + "'");
            }
            if (candidates.size() > 1) {
                throw new HarnessException("'" + name + "' is ambiguous, use one of " + candidates);
            }
            fqcn = candidates.get(0);
        }
        ClassLoader loader = OracleHarness.class.getClassLoader();
        Class<?> type = Class.forName(fqcn, true, loader);
        if (!Message.class.isAssignableFrom(type)) {
            throw new HarnessException(fqcn + " is not a generated message class");
        }
        Class<?> converter = Class.forName(fqcn + "JsonConverter", true, loader);
        found = new MessageClass(type, converter);
        byName.put(name, found);
        return found;
    }

    private Map<String, List<String>> index() throws IOException {
        Map<String, List<String>> result = index;
        if (result == null) {
            synchronized (this) {
                if (index == null) {
                    buildIndex();
                }
                result = index;
            }
        }
        return result;
    }

    /** Every top-level generated message class on the class path that has a JsonConverter. */
    private void buildIndex() throws IOException {
        Map<String, List<String>> names = new TreeMap<>();
        Map<String, String> jars = new TreeMap<>();
        ClassLoader loader = OracleHarness.class.getClassLoader();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (!entry.endsWith(".jar")) {
                continue;
            }
            File file = new File(entry);
            try (JarFile jar = new JarFile(file)) {
                Enumeration<JarEntry> entries = jar.entries();
                while (entries.hasMoreElements()) {
                    String path = entries.nextElement().getName();
                    if (!path.endsWith("JsonConverter.class") || path.indexOf('$') >= 0) {
                        continue;
                    }
                    String classPath = path.substring(0, path.length() - "JsonConverter.class".length());
                    if (jar.getEntry(classPath + ".class") == null) {
                        continue;
                    }
                    String fqcn = classPath.replace('/', '.');
                    try {
                        Class<?> type = Class.forName(fqcn, false, loader);
                        if (!Message.class.isAssignableFrom(type) || type.getEnclosingClass() != null
                                || !Modifier.isPublic(type.getModifiers())) {
                            continue;
                        }
                    } catch (ClassNotFoundException | LinkageError e) {
                        continue;
                    }
                    List<String> list = names.computeIfAbsent(
                        fqcn.substring(fqcn.lastIndexOf('.') + 1), k -> new ArrayList<>());
                    if (!list.contains(fqcn)) {
                        list.add(fqcn);
                        jars.put(fqcn, file.getName());
                    }
                }
            }
        }
        indexJars = jars;
        index = names;
    }

    private ObjectNode classes() throws IOException {
        Map<String, List<String>> names = index();
        ObjectNode classes = NODES.objectNode();
        ObjectNode sources = NODES.objectNode();
        ObjectNode ambiguous = NODES.objectNode();
        for (Map.Entry<String, List<String>> e : names.entrySet()) {
            for (String fqcn : e.getValue()) {
                ObjectNode source = NODES.objectNode();
                source.put("package", fqcn.substring(0, fqcn.lastIndexOf('.')));
                source.put("jar", indexJars.get(fqcn));
                sources.set(fqcn, source);
            }
            if (e.getValue().size() == 1) {
                classes.put(e.getKey(), e.getValue().get(0));
            } else {
                ArrayNode all = ambiguous.putArray(e.getKey());
                e.getValue().forEach(all::add);
            }
        }
        ObjectNode out = ok();
        out.set("classes", classes);
        out.set("ambiguous", ambiguous);
        out.set("sources", sources);
        return out;
    }

    private ObjectNode info() throws IOException {
        Properties props = new Properties();
        try (InputStream in = OracleHarness.class.getClassLoader()
                .getResourceAsStream("kafka/kafka-version.properties")) {
            if (in != null) {
                props.load(in);
            }
        }
        ObjectNode out = ok();
        out.put("kafkaVersion", props.getProperty("version", "unknown"));
        out.put("commitId", props.getProperty("commitId", "unknown"));
        out.put("java", System.getProperty("java.version"));
        return out;
    }

    // -------------------------------------------------------------------------- coordinators

    private ObjectNode coordinator(JsonNode request) throws Throwable {
        String which = text(request, "serde");
        CoordinatorRecordSerde serde = coordinatorSerdes.get(which);
        if (serde == null) {
            throw new HarnessException("unknown serde '" + which + "' (group, share or transaction)");
        }
        byte[] key = unhex(text(request, "key"));
        JsonNode valueNode = request.get("value");
        byte[] value = valueNode == null || valueNode.isNull() ? null : unhex(valueNode.asText());
        CoordinatorRecord record = serde.deserialize(
            ByteBuffer.wrap(key), value == null ? null : ByteBuffer.wrap(value));

        // The serde reads the key at the version given by its type prefix.
        short type = ByteBuffer.wrap(key).getShort();
        ApiMessage keyMessage = record.key();
        ObjectNode keyOut = NODES.objectNode();
        keyOut.put("type", type);
        keyOut.put("apiKey", keyMessage.apiKey());
        keyOut.put("class", keyMessage.getClass().getName());
        keyOut.set("json", toJson(keyMessage, type));

        ObjectNode out = ok();
        out.put("serdeClass", serde.getClass().getName());
        out.set("key", keyOut);
        ApiMessageAndVersion valueAndVersion = record.value();
        if (valueAndVersion == null) {
            out.putNull("value");
        } else {
            ObjectNode valueOut = NODES.objectNode();
            valueOut.put("version", valueAndVersion.version());
            valueOut.put("apiKey", valueAndVersion.message().apiKey());
            valueOut.put("class", valueAndVersion.message().getClass().getName());
            valueOut.set("json", toJson(valueAndVersion.message(), valueAndVersion.version()));
            out.set("value", valueOut);
        }
        return out;
    }

    private JsonNode toJson(Message message, short version) throws Throwable {
        MessageClass mc = resolve(message.getClass().getName());
        return (JsonNode) mc.toJson.invokeExact(message, version, true);
    }

    // ----------------------------------------------------------------------------- metadata

    private ObjectNode metadata(byte[] data) {
        ByteBufferAccessor accessor = new ByteBufferAccessor(ByteBuffer.wrap(data));
        ApiMessageAndVersion record = MetadataRecordSerde.INSTANCE.read(accessor, data.length);
        ByteBufferAccessor frame = new ByteBufferAccessor(ByteBuffer.wrap(data));
        int frameVersion = frame.readUnsignedVarint();
        ApiMessage message = record.message();
        ObjectNode out = ok();
        out.put("frameVersion", frameVersion);
        out.put("apiKey", message.apiKey());
        out.put("type", MetadataRecordType.fromId(message.apiKey()).name());
        out.put("version", record.version());
        out.put("class", message.getClass().getName());
        out.set("json", MetadataJsonConverters.writeJson(message, record.version()));
        return out;
    }

    /**
     * A __remote_log_metadata record value: the frame and generated record as the storage
     * module's serde reads them, and the text of the object RemoteLogMetadataSerde makes of it
     * (what DumpLogSegments --remote-log-metadata-decoder prints), or the exception that makes.
     */
    private ObjectNode remoteLogMetadata(byte[] data) {
        org.apache.kafka.server.common.serialization.BytesApiMessageSerde frames =
            new org.apache.kafka.server.common.serialization.BytesApiMessageSerde() {
                @Override
                public ApiMessage apiMessageFor(short apiKey) {
                    return org.apache.kafka.server.log.remote.metadata.storage.generated
                        .MetadataRecordType.fromId(apiKey).newMetadataRecord();
                }
            };
        ApiMessageAndVersion record = frames.deserialize(data);
        ApiMessage message = record.message();
        ObjectNode out = ok();
        out.put("apiKey", message.apiKey());
        out.put("type", org.apache.kafka.server.log.remote.metadata.storage.generated
            .MetadataRecordType.fromId(message.apiKey()).name());
        out.put("version", record.version());
        out.set("json", org.apache.kafka.server.log.remote.metadata.storage.generated
            .MetadataJsonConverters.writeJson(message, record.version()));
        try {
            out.put("text", new org.apache.kafka.server.log.remote.metadata.storage.serialization
                .RemoteLogMetadataSerde().deserialize(data).toString());
        } catch (RuntimeException e) {
            out.put("textError", e.getMessage());
        }
        return out;
    }

    // ------------------------------------------------------------------------------ dumplog

    /**
     * DumpLogSegments comes from kafka-tools, which is not published for the reference release;
     * it runs from its own class path (the "oracle.dumplog.jars" directory) in a separate class
     * loader, so its Kafka classes never mix with the reference jars.
     */
    private ClassLoader dumpLogLoader;
    private MethodHandle dumpLogMain;

    private MethodHandle dumpLogMain() throws Exception {
        if (dumpLogMain != null) {
            return dumpLogMain;
        }
        String dir = System.getProperty("oracle.dumplog.jars");
        if (dir == null) {
            throw new HarnessException("system property oracle.dumplog.jars is not set");
        }
        File[] jars = new File(dir).listFiles((d, name) -> name.endsWith(".jar"));
        if (jars == null || jars.length == 0) {
            throw new HarnessException("no jars in " + dir + " (run tests/oracle/fetch.sh)");
        }
        java.util.Arrays.sort(jars);
        java.net.URL[] urls = new java.net.URL[jars.length];
        for (int i = 0; i < jars.length; i++) {
            urls[i] = jars[i].toURI().toURL();
        }
        ClassLoader loader = new java.net.URLClassLoader(
            "dumplog", urls, ClassLoader.getPlatformClassLoader());
        // That class path has its own Exit class (the package moved over releases): make its
        // exit and halt throw, too.
        Class<?> exit = null;
        for (String name : new String[] {
                "org.apache.kafka.common.utils.internals.Exit", "org.apache.kafka.common.utils.Exit"}) {
            try {
                exit = Class.forName(name, true, loader);
                break;
            } catch (ClassNotFoundException e) {
                // try the next location
            }
        }
        if (exit == null) {
            throw new HarnessException("no Kafka Exit class in " + dir);
        }
        Class<?> procedure = Class.forName(exit.getName() + "$Procedure", true, loader);
        Object thrower = java.lang.reflect.Proxy.newProxyInstance(loader, new Class<?>[] {procedure},
            (proxy, method, args) -> {
                if (method.getDeclaringClass() == Object.class) {
                    switch (method.getName()) {
                        case "hashCode":
                            return System.identityHashCode(proxy);
                        case "equals":
                            return proxy == args[0];
                        default:
                            return "exit procedure of the oracle harness";
                    }
                }
                throw new ExitCalled((Integer) args[0], (String) args[1]);
            });
        exit.getMethod("setExitProcedure", procedure).invoke(null, thrower);
        exit.getMethod("setHaltProcedure", procedure).invoke(null, thrower);
        Class<?> tool = Class.forName("org.apache.kafka.tools.DumpLogSegments", true, loader);
        dumpLogLoader = loader;
        dumpLogMain = MethodHandles.publicLookup().findStatic(
            tool, "main", MethodType.methodType(void.class, String[].class));
        return dumpLogMain;
    }

    private synchronized ObjectNode dumpLog(JsonNode request) throws Throwable {
        JsonNode argsNode = request.get("args");
        if (argsNode == null || !argsNode.isArray()) {
            throw new HarnessException("'args' must be an array of strings");
        }
        String[] args = new String[argsNode.size()];
        for (int i = 0; i < args.length; i++) {
            args[i] = argsNode.get(i).asText();
        }
        MethodHandle main = dumpLogMain();
        ByteArrayOutputStream outBytes = new ByteArrayOutputStream();
        ByteArrayOutputStream errBytes = new ByteArrayOutputStream();
        PrintStream savedOut = System.out;
        PrintStream savedErr = System.err;
        Thread thread = Thread.currentThread();
        ClassLoader savedContext = thread.getContextClassLoader();
        Integer exitStatus = null;
        Throwable failure = null;
        try (PrintStream out = new PrintStream(outBytes, true, StandardCharsets.UTF_8);
             PrintStream err = new PrintStream(errBytes, true, StandardCharsets.UTF_8)) {
            System.setOut(out);
            System.setErr(err);
            thread.setContextClassLoader(dumpLogLoader);
            try {
                main.invoke(args);
            } catch (ExitCalled e) {
                exitStatus = e.status;
            } catch (Throwable t) {
                failure = t;
            } finally {
                thread.setContextClassLoader(savedContext);
                out.flush();
                err.flush();
                System.setOut(savedOut);
                System.setErr(savedErr);
            }
        }
        ObjectNode result = failure == null ? ok() : failure(failure);
        result.put("stdout", outBytes.toString(StandardCharsets.UTF_8));
        result.put("stderr", errBytes.toString(StandardCharsets.UTF_8));
        if (exitStatus == null) {
            result.putNull("exitStatus");
        } else {
            result.put("exitStatus", exitStatus);
        }
        return result;
    }

    // ------------------------------------------------------------------------------ helpers

    private static ObjectNode ok() {
        ObjectNode out = NODES.objectNode();
        out.put("ok", true);
        return out;
    }

    private static ObjectNode failure(Throwable t) {
        while (t instanceof java.lang.reflect.InvocationTargetException && t.getCause() != null) {
            t = t.getCause();
        }
        ObjectNode out = NODES.objectNode();
        out.put("ok", false);
        out.put("error", t.getClass().getSimpleName() + ": " + t.getMessage());
        out.put("exception", t.getClass().getName());
        ArrayNode causes = NODES.arrayNode();
        for (Throwable c = t.getCause(); c != null && c != t && causes.size() < 8; c = c.getCause()) {
            causes.add(c.getClass().getSimpleName() + ": " + c.getMessage());
        }
        if (!causes.isEmpty()) {
            out.set("causes", causes);
        }
        return out;
    }

    private static String text(JsonNode request, String field) {
        JsonNode node = request.get(field);
        if (node == null || !node.isTextual()) {
            throw new HarnessException("missing or non-string field '" + field + "'");
        }
        return node.textValue();
    }

    private static short version(JsonNode request) {
        JsonNode node = request.get("version");
        if (node == null || !node.canConvertToInt()
                || node.intValue() < Short.MIN_VALUE || node.intValue() > Short.MAX_VALUE) {
            throw new HarnessException("missing or invalid field 'version'");
        }
        return (short) node.intValue();
    }

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private static String hex(byte[] data) {
        char[] out = new char[data.length * 2];
        for (int i = 0; i < data.length; i++) {
            out[2 * i] = HEX[(data[i] >> 4) & 0xf];
            out[2 * i + 1] = HEX[data[i] & 0xf];
        }
        return new String(out);
    }

    private static byte[] unhex(String text) {
        if (text.length() % 2 != 0) {
            throw new HarnessException("hex string has an odd length");
        }
        byte[] out = new byte[text.length() / 2];
        for (int i = 0; i < out.length; i++) {
            int hi = Character.digit(text.charAt(2 * i), 16);
            int lo = Character.digit(text.charAt(2 * i + 1), 16);
            if (hi < 0 || lo < 0) {
                throw new HarnessException("invalid hex digit near position " + 2 * i);
            }
            out[i] = (byte) ((hi << 4) | lo);
        }
        return out;
    }
}
