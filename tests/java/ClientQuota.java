// Sets (or, with RATE "none", removes) a consumer byte-rate quota for one client id through
// Kafka's admin API (Admin.alterClientQuotas, KIP-546), so a test can make a slice last longer
// than its MSK IAM tokens (tests/msk_iam.rs). Run as a single-file program on Apache Kafka's
// classpath:
//   infra/local/stack.sh java-exec tests/java/ClientQuota.java BOOTSTRAP CLIENT_ID RATE|none

import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;

public class ClientQuota {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: ClientQuota BOOTSTRAP CLIENT_ID RATE|none");
            System.exit(2);
        }
        var entity = new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, args[1]));
        Double rate = args[2].equals("none") ? null : Double.valueOf(args[2]);
        var op = new ClientQuotaAlteration.Op("consumer_byte_rate", rate);
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", args[0]))) {
            admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity, List.of(op)))).all().get();
        }
    }
}
