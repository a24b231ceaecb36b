// Prints, as one JSON object, the metadata.version and feature levels a Kafka release supports,
// read by reflection from its own kafka-server-common jar (run with that jar and the release's
// kafka-clients jar on the class path):
//
//   java -cp kafka-server-common-X.jar:kafka-clients-X.jar FeatureTables.java
//
// metadataVersions: every MetadataVersion of the release and its feature level;
// latestProductionMetadataVersion: MetadataVersion.LATEST_PRODUCTION (latest() before it existed);
// features: per feature name, the highest level the release knows and its latest production level;
// configResourceTypes: the ConfigResource types of its kafka-clients jar and their ids.
// Used by codegen/forensics/release_specs.py to vendor codegen/forensics/release_specs.json.
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.TreeMap;

public class FeatureTables {
  public static void main(String[] args) throws Exception {
    Class<?> mv = Class.forName("org.apache.kafka.server.common.MetadataVersion");
    StringBuilder out = new StringBuilder("{\"metadataVersions\":{");
    String sep = "";
    for (Object v : mv.getEnumConstants()) {
      short level = (short) mv.getMethod("featureLevel").invoke(v);
      out.append(sep).append('"').append(v).append("\":").append(level);
      sep = ",";
    }
    Object latest;
    try {
      latest = mv.getField("LATEST_PRODUCTION").get(null);
    } catch (NoSuchFieldException e) {
      // Before 3.4 every MetadataVersion of the release is a production one: latest().
      latest = mv.getMethod("latest").invoke(null);
    }
    out.append("},\"latestProductionMetadataVersion\":\"")
        .append(latest).append("\",\"features\":{");
    Map<String, int[]> features = new TreeMap<>();
    for (String name : new String[] {
        "org.apache.kafka.server.common.Feature", "org.apache.kafka.server.common.Features"}) {
      Class<?> f;
      try {
        f = Class.forName(name);
      } catch (ClassNotFoundException e) {
        continue;
      }
      if (!f.isEnum()) {
        continue; // 3.6 to 3.8 have a Features class that is not the feature enum
      }
      for (Object v : f.getEnumConstants()) {
        String feature = (String) f.getMethod("featureName").invoke(v);
        if (feature.contains("test")) {
          continue;
        }
        int production = level(f.getMethod("latestProduction").invoke(v));
        int known = level(f.getMethod("latestTesting").invoke(v));
        features.put(feature, new int[] {Math.max(known, production), production});
      }
    }
    if (!features.containsKey("kraft.version")) {
      try {
        Class<?> kv = Class.forName("org.apache.kafka.server.common.KRaftVersion");
        if (!kv.isEnum()) {
          throw new ClassNotFoundException("KRaftVersion is not an enum");
        }
        int known = 0;
        for (Object v : kv.getEnumConstants()) {
          known = Math.max(known, level(v));
        }
        int production = 0;
        try {
          production = level(kv.getField("LATEST_PRODUCTION").get(null));
        } catch (NoSuchFieldException e) {
          // No production kraft.version above 0 in this release.
        }
        features.put("kraft.version", new int[] {known, production});
      } catch (ClassNotFoundException e) {
        // The release has no kraft.version feature.
      }
    }
    sep = "";
    for (Map.Entry<String, int[]> e : features.entrySet()) {
      out.append(sep).append('"').append(e.getKey()).append("\":{\"known\":")
          .append(e.getValue()[0]).append(",\"production\":").append(e.getValue()[1]).append('}');
      sep = ",";
    }
    out.append("},\"configResourceTypes\":{");
    Class<?> types = Class.forName("org.apache.kafka.common.config.ConfigResource$Type");
    sep = "";
    for (Object t : types.getEnumConstants()) {
      byte id = (byte) types.getMethod("id").invoke(t);
      out.append(sep).append('"').append(t).append("\":").append(id);
      sep = ",";
    }
    System.out.println(out.append("}}"));
  }

  private static int level(Object version) throws Exception {
    if (version instanceof Number) {
      return ((Number) version).intValue();
    }
    Method m = version.getClass().getMethod("featureLevel");
    return ((Number) m.invoke(version)).intValue();
  }
}
