// Java MirrorMaker 2's own client helpers (connect-mirror-client's RemoteClusterUtils), run by
// the interop tests (tests/java_mm2.rs) as a single-file program on Apache Kafka's classpath:
//   infra/local/stack.sh java-exec tests/java/Mm2Client.java COMMAND BOOTSTRAP [ARGS...]
// so that what a Java user's tooling reads from a cluster mirrorslice wrote is checked by the
// real thing. Output is plain lines for the test to parse; any exception exits non-zero.
//
//   translate BOOTSTRAP SOURCE_ALIAS GROUP
//       RemoteClusterUtils.translateOffsets: one "topic<TAB>partition<TAB>offset" line per
//       partition, sorted.
//   topology BOOTSTRAP SOURCE_ALIAS
//       "hops<TAB>N" (replicationHops to SOURCE_ALIAS, -1 if unreachable), then "upstream",
//       "heartbeat-topics" and "checkpoint-topics" lines, each a sorted comma-separated set.

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

public class Mm2Client {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            usage();
        }
        Map<String, Object> props = Map.of("bootstrap.servers", args[1]);
        switch (args[0]) {
            case "translate" -> {
                if (args.length != 4) {
                    usage();
                }
                translate(props, args[2], args[3]);
            }
            case "topology" -> topology(props, args[2]);
            default -> usage();
        }
    }

    static void translate(Map<String, Object> props, String sourceAlias, String group)
            throws Exception {
        Map<TopicPartition, OffsetAndMetadata> translated =
                RemoteClusterUtils.translateOffsets(props, sourceAlias, group, Duration.ofSeconds(30));
        Map<String, Long> sorted = new TreeMap<>();
        translated.forEach((tp, om) -> sorted.put(tp.topic() + "\t" + tp.partition(), om.offset()));
        sorted.forEach((tp, offset) -> System.out.println(tp + "\t" + offset));
    }

    static void topology(Map<String, Object> props, String sourceAlias) throws Exception {
        System.out.println("hops\t" + RemoteClusterUtils.replicationHops(props, sourceAlias));
        System.out.println("upstream\t" + joined(RemoteClusterUtils.upstreamClusters(props)));
        System.out.println("heartbeat-topics\t" + joined(RemoteClusterUtils.heartbeatTopics(props)));
        System.out.println("checkpoint-topics\t" + joined(RemoteClusterUtils.checkpointTopics(props)));
    }

    static String joined(Set<String> set) {
        return String.join(",", new TreeSet<>(set));
    }

    static void usage() {
        System.err.println("usage: Mm2Client translate BOOTSTRAP SOURCE_ALIAS GROUP"
                + " | topology BOOTSTRAP SOURCE_ALIAS");
        System.exit(2);
    }
}
