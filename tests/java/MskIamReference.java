// AWS's MSK IAM library for Java (software.amazon.msk:aws-msk-iam-auth, tests/msk_iam/pom.xml),
// the reference for our IAM support, against the stack's IAM listeners. Run with the library on
// the class path (not the brokers'):
//   infra/local/stack.sh msk-iam-exec tests/java/MskIamReference.java MODE ARGS...
// Modes:
//   token REGION                      one token as IAMOAuthBearerLoginCallbackHandler makes it, on
//                                     stdout (alone), for the default credential chain
//                                     (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)
//   metadata BOOTSTRAP CA_PEM REGION  an admin client configured as MSK documents lists the topics
//                                     (their count on stdout); exit 0 if the broker accepted it
//   reauth BOOTSTRAP CA_PEM REGION EXPIRES SECONDS
//                                     for SECONDS, one admin request a second, with tokens valid
//                                     EXPIRES seconds (the library's own are 900 s: too long to
//                                     wait for), signed by the SDK signer the library uses: Kafka's
//                                     client refreshes them and re-authenticates (KIP-368). Exit 0
//                                     if every request succeeded; stderr has a line per token
// REGION is what the library signs for: for a bootstrap that is not an MSK host name (localhost)
// it reads the region from the SDK's default region chain (system property aws.region, then
// AWS_REGION, then the profile, then EC2 instance metadata), never from the host, so this sets
// aws.region.

import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import javax.security.auth.callback.Callback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerToken;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerTokenCallback;

import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.signer.Aws4Signer;
import software.amazon.awssdk.auth.signer.params.Aws4PresignerParams;
import software.amazon.awssdk.http.SdkHttpFullRequest;
import software.amazon.awssdk.http.SdkHttpMethod;
import software.amazon.awssdk.regions.Region;
import software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler;
import software.amazon.msk.auth.iam.IAMOAuthBearerToken;
import software.amazon.msk.auth.iam.internals.UserAgentUtils;

// Aws4Signer is deprecated in favour of the SDK's newer signer, but it is what the library uses.
@SuppressWarnings("deprecation")
public class MskIamReference {
    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "";
        if (mode.equals("token") && args.length == 2) {
            System.setProperty("aws.region", args[1]);
            System.out.println(libraryToken());
        } else if (mode.equals("metadata") && args.length == 4) {
            System.setProperty("aws.region", args[3]);
            Properties config = clientConfig(args[1], args[2]);
            config.put("sasl.login.callback.handler.class", IAMOAuthBearerLoginCallbackHandler.class.getName());
            try (Admin admin = Admin.create(config)) {
                int topics = admin.listTopics(new ListTopicsOptions().listInternal(true)).names().get().size();
                System.out.println(topics);
            }
        } else if (mode.equals("reauth") && args.length == 6) {
            System.setProperty("aws.region", args[3]);
            ShortLivedTokens.expiresSeconds = Integer.parseInt(args[4]);
            Properties config = clientConfig(args[1], args[2]);
            config.put("sasl.login.callback.handler.class", ShortLivedTokens.class);
            // Kafka's login refresh thread otherwise waits at least a minute between tokens.
            config.put("sasl.login.refresh.min.period.seconds", "1");
            config.put("sasl.login.refresh.buffer.seconds", "1");
            System.exit(reauth(config, Integer.parseInt(args[5])) ? 0 : 1);
        } else {
            System.err.println("usage: MskIamReference token REGION\n"
                    + "       MskIamReference metadata BOOTSTRAP CA_PEM REGION\n"
                    + "       MskIamReference reauth BOOTSTRAP CA_PEM REGION EXPIRES SECONDS");
            System.exit(2);
        }
    }

    // The client settings of MSK's documentation for IAM over OAUTHBEARER, and our test CA.
    static Properties clientConfig(String bootstrap, String caPem) {
        Properties config = new Properties();
        config.put("bootstrap.servers", bootstrap);
        config.put("security.protocol", "SASL_SSL");
        config.put("sasl.mechanism", "OAUTHBEARER");
        config.put("sasl.jaas.config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;");
        config.put("ssl.truststore.type", "PEM");
        config.put("ssl.truststore.location", caPem);
        config.put("default.api.timeout.ms", "30000");
        config.put("request.timeout.ms", "10000");
        return config;
    }

    static String libraryToken() throws Exception {
        IAMOAuthBearerLoginCallbackHandler handler = new IAMOAuthBearerLoginCallbackHandler();
        // What OAuthBearerLoginModule passes for "OAuthBearerLoginModule required;".
        handler.configure(Map.of(), OAuthBearerLoginModule.OAUTHBEARER_MECHANISM,
                List.of(new AppConfigurationEntry(OAuthBearerLoginModule.class.getName(),
                        AppConfigurationEntry.LoginModuleControlFlag.REQUIRED, Map.of())));
        OAuthBearerTokenCallback callback = new OAuthBearerTokenCallback();
        handler.handle(new Callback[] {callback});
        handler.close();
        return callback.token().value();
    }

    static boolean reauth(Properties config, int seconds) throws Exception {
        List<String> failures = new ArrayList<>();
        try (Admin admin = Admin.create(config)) {
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            while (System.nanoTime() < end) {
                try {
                    admin.listTopics().names().get(10, TimeUnit.SECONDS);
                } catch (Exception e) {
                    String why = Instant.now() + " " + e.getMessage();
                    System.err.println("request failed: " + why);
                    failures.add(why);
                }
                Thread.sleep(1000);
            }
        }
        System.err.println(failures.isEmpty() ? "all requests succeeded" : failures.size() + " requests failed");
        return failures.isEmpty();
    }

    /**
     * Tokens as IAMOAuthBearerLoginCallbackHandler makes them (the SDK's Aws4Signer presigning
     * kafka-cluster:Connect, the library's User-Agent appended) but valid for expiresSeconds.
     */
    public static class ShortLivedTokens implements AuthenticateCallbackHandler {
        static int expiresSeconds;

        @Override
        public void configure(Map<String, ?> configs, String mechanism, List<AppConfigurationEntry> entries) {}

        @Override
        public void handle(Callback[] callbacks) throws UnsupportedCallbackException {
            for (Callback callback : callbacks) {
                if (!(callback instanceof OAuthBearerTokenCallback)) {
                    throw new UnsupportedCallbackException(callback);
                }
                OAuthBearerToken token = token();
                System.err.println(Instant.now() + " new token, signed " + Instant.ofEpochMilli(token.startTimeMs())
                        + ", expires " + Instant.ofEpochMilli(token.lifetimeMs()));
                ((OAuthBearerTokenCallback) callback).token(token);
            }
        }

        static OAuthBearerToken token() {
            try {
                Region region = Region.of(System.getProperty("aws.region"));
                SdkHttpFullRequest request = SdkHttpFullRequest.builder()
                        .method(SdkHttpMethod.GET)
                        .protocol("https")
                        .host("kafka." + region + ".amazonaws.com")
                        .appendRawQueryParameter("Action", "kafka-cluster:Connect")
                        .build();
                Aws4PresignerParams params = Aws4PresignerParams.builder()
                        .awsCredentials(DefaultCredentialsProvider.builder().build().resolveCredentials())
                        .expirationTime(Instant.now().plusSeconds(expiresSeconds))
                        .signingRegion(region)
                        .signingName("kafka-cluster")
                        .build();
                String url = Aws4Signer.create().presign(request, params).toBuilder()
                        .appendRawQueryParameter("User-Agent", UserAgentUtils.getUserAgentValue())
                        .build().getUri().toString();
                return new IAMOAuthBearerToken(Base64.getUrlEncoder().withoutPadding()
                        .encodeToString(url.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }

        @Override
        public void close() {}
    }
}
