// Creates SASL/SCRAM users through Kafka's admin API (Admin.alterUserScramCredentials, KIP-554),
// as an operator of a real cluster does, for the secured-listener tests
// (tests/secured_clusters.rs). Run as a single-file program on Apache Kafka's classpath:
//   infra/local/stack.sh java-exec tests/java/ScramUsers.java BOOTSTRAP USER PASSWORD
// gives USER both a SCRAM-SHA-256 and a SCRAM-SHA-512 credential with PASSWORD. The password
// is an argument because this is a throwaway test user on a loopback test broker.

import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;

public class ScramUsers {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: ScramUsers BOOTSTRAP USER PASSWORD");
            System.exit(2);
        }
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", args[0]))) {
            // One request per mechanism: a request may alter a user's credentials only once.
            for (ScramMechanism m : List.of(ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)) {
                var upsert = new UserScramCredentialUpsertion(args[1], new ScramCredentialInfo(m, 4096), args[2]);
                admin.alterUserScramCredentials(List.of(upsert)).all().get();
            }
        }
    }
}
