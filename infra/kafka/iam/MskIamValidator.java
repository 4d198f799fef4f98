// The IAM listeners' token check (infra/local/stack.sh): validates MSK IAM OAUTHBEARER tokens as
// Amazon MSK does, with the SigV4 signature recomputed here rather than by AWS code, so a
// token our Rust signer makes is checked against the rules, not against another implementation.
// A token is base64url (no padding) of a presigned URL:
//   https://kafka.<region>.amazonaws.com[/]?Action=kafka-cluster%3AConnect&X-Amz-Algorithm=...
//   &X-Amz-Credential=<AKID>%2F<yyyymmdd>%2F<region>%2Fkafka-cluster%2Faws4_request&X-Amz-Date=...
//   &X-Amz-Expires=900&X-Amz-SignedHeaders=host[&X-Amz-Security-Token=...]&X-Amz-Signature=<hex>
//   &User-Agent=<lib/version>
// in any parameter order; User-Agent is added after signing, so it is not signed.
//
// JAAS options (the listener's OAuthBearerLoginModule entry): accessKeyId, secretAccessKey and
// region expected, cluster (a label for the log) and tokenLog, a file to which every validation
// appends one JSON line (both brokers may share it: appends take a file lock).
//
// Without a broker, for checking tokens by hand (exit 0 if valid; the JSON line on stdout):
//   infra/local/stack.sh java-exec infra/kafka/iam/MskIamValidator.java selftest \
//       ACCESS_KEY_ID SECRET_ACCESS_KEY REGION TOKEN [NOW]
// NOW (yyyyMMddTHHmmssZ) stands in for the clock, for tokens signed at a fixed time.
package mirrorslice.stack;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;

import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerExtensionsValidatorCallback;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerToken;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallback;

public class MskIamValidator implements AuthenticateCallbackHandler {
    static final String ACTION = "kafka-cluster:Connect";
    static final String SERVICE = "kafka-cluster";
    static final String ALGORITHM = "AWS4-HMAC-SHA256";
    static final int MAX_EXPIRES = 900;
    // Tokens signed by a client whose clock runs ahead, as SigV4 services allow.
    static final long MAX_CLOCK_SKEW_MS = 5 * 60 * 1000;
    // SHA-256 of the empty body: what botocore (payload signing on for https unless a request
    // turns it off) and the AWS SDK for Java v2's Aws4Signer.presign (which aws-msk-iam-auth uses)
    // both put in the canonical request of this GET.
    static final String EMPTY_PAYLOAD_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    static final DateTimeFormatter AMZ_DATE = DateTimeFormatter.ofPattern("uuuuMMdd'T'HHmmss'Z'");

    private String accessKeyId;
    private String secretAccessKey;
    private String region;
    private String cluster;
    private Path tokenLog;

    @Override
    public void configure(Map<String, ?> configs, String mechanism, List<AppConfigurationEntry> jaasConfigEntries) {
        if (!OAuthBearerLoginModule.OAUTHBEARER_MECHANISM.equals(mechanism)) {
            throw new IllegalArgumentException("MskIamValidator serves OAUTHBEARER only, not " + mechanism);
        }
        Map<String, ?> options = jaasConfigEntries.get(0).getOptions();
        accessKeyId = option(options, "accessKeyId");
        secretAccessKey = option(options, "secretAccessKey");
        region = option(options, "region");
        cluster = option(options, "cluster");
        tokenLog = Path.of(option(options, "tokenLog"));
    }

    private static String option(Map<String, ?> options, String name) {
        Object value = options.get(name);
        if (!(value instanceof String) || ((String) value).isEmpty()) {
            throw new IllegalArgumentException("MskIamValidator: JAAS option " + name + " missing");
        }
        return (String) value;
    }

    @Override
    public void handle(Callback[] callbacks) throws IOException, UnsupportedCallbackException {
        for (Callback callback : callbacks) {
            if (callback instanceof OAuthBearerValidatorCallback) {
                OAuthBearerValidatorCallback validation = (OAuthBearerValidatorCallback) callback;
                Result result = validate(validation.tokenValue(), accessKeyId, secretAccessKey, region,
                        System.currentTimeMillis());
                appendLine(tokenLog, result.json(cluster));
                if (result.valid) {
                    validation.token(result.token());
                } else {
                    validation.error("invalid_token", result.reason, null);
                }
            } else if (callback instanceof OAuthBearerExtensionsValidatorCallback) {
                // MSK IAM clients send no SASL extensions; any sent are left unvalidated, which
                // the broker ignores.
            } else {
                throw new UnsupportedCallbackException(callback);
            }
        }
    }

    @Override
    public void close() {}

    /** One validation: what the token says, and whether it passed. */
    static final class Result {
        final String tokenValue;
        boolean valid;
        String reason;
        String accessKeyId;
        String amzDate;
        Integer expires;
        String userAgent;
        boolean securityToken;
        long startMs;
        long lifetimeMs;

        Result(String tokenValue) {
            this.tokenValue = tokenValue;
        }

        Result fail(String why) {
            valid = false;
            reason = why;
            return this;
        }

        OAuthBearerToken token() {
            String value = tokenValue, principal = accessKeyId;
            long start = startMs, lifetime = lifetimeMs;
            return new OAuthBearerToken() {
                @Override public String value() { return value; }
                @Override public Set<String> scope() { return Set.of(); }
                // The broker ends the session here (KIP-368 re-authentication).
                @Override public long lifetimeMs() { return lifetime; }
                // Stable across re-authentication with refreshed tokens, which the broker requires.
                @Override public String principalName() { return principal; }
                @Override public Long startTimeMs() { return start; }
            };
        }

        String json(String cluster) {
            return "{\"time_ms\":" + System.currentTimeMillis()
                    + ",\"cluster\":" + quote(cluster)
                    + ",\"valid\":" + valid
                    + ",\"reason\":" + quote(reason)
                    + ",\"access_key_id\":" + quote(accessKeyId)
                    + ",\"amz_date\":" + quote(amzDate)
                    + ",\"expires\":" + expires
                    + ",\"user_agent\":" + quote(userAgent)
                    + ",\"security_token\":" + securityToken
                    + ",\"token\":" + quote(tokenValue) + "}";
        }
    }

    static Result validate(String token, String expectedAccessKeyId, String secretAccessKey, String region,
            long nowMs) {
        Result r = new Result(token);
        if (token == null || token.isEmpty()) {
            return r.fail("empty token");
        }
        if (token.indexOf('=') >= 0) {
            return r.fail("token is padded base64: base64url without padding expected");
        }
        String url;
        try {
            url = new String(Base64.getUrlDecoder().decode(token), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return r.fail("token is not base64url: " + e.getMessage());
        }
        String host = "kafka." + region + ".amazonaws.com";
        // Path "/" (botocore) or empty (aws-msk-iam-auth: "https://host?Action=..."); SigV4's
        // canonical URI is "/" for both.
        String prefix = "https://" + host + "/?";
        if (url.startsWith("https://" + host + "?")) {
            prefix = "https://" + host + "?";
        } else if (!url.startsWith(prefix)) {
            return r.fail("URL does not start with " + prefix + ": " + abbreviate(url));
        }
        if (url.indexOf('#') >= 0) {
            return r.fail("URL has a fragment");
        }
        // Parameters decoded; canonical encoding is redone below, as a SigV4 service does.
        Map<String, String> params = new HashMap<>();
        for (String pair : url.substring(prefix.length()).split("&", -1)) {
            int eq = pair.indexOf('=');
            if (eq <= 0) {
                return r.fail("malformed query parameter: " + abbreviate(pair));
            }
            String key, value;
            try {
                key = percentDecode(pair.substring(0, eq));
                value = percentDecode(pair.substring(eq + 1));
            } catch (IllegalArgumentException e) {
                return r.fail("query parameter " + abbreviate(pair) + ": " + e.getMessage());
            }
            if (params.put(key, value) != null) {
                return r.fail("query parameter " + key + " repeated");
            }
        }
        r.userAgent = params.get("User-Agent");
        r.securityToken = params.containsKey("X-Amz-Security-Token");
        r.amzDate = params.get("X-Amz-Date");
        String credential = params.get("X-Amz-Credential");
        if (credential != null) {
            r.accessKeyId = credential.split("/", -1)[0];
        }
        String expires = params.get("X-Amz-Expires");
        if (expires != null && expires.matches("[0-9]{1,9}")) {
            r.expires = Integer.parseInt(expires);
        }

        if (!ACTION.equals(params.get("Action"))) {
            return r.fail("Action is " + params.get("Action") + ", expected " + ACTION);
        }
        if (!ALGORITHM.equals(params.get("X-Amz-Algorithm"))) {
            return r.fail("X-Amz-Algorithm is " + params.get("X-Amz-Algorithm") + ", expected " + ALGORITHM);
        }
        if (r.amzDate == null) {
            return r.fail("X-Amz-Date missing");
        }
        long signedMs;
        try {
            signedMs = LocalDateTime.parse(r.amzDate, AMZ_DATE).toInstant(ZoneOffset.UTC).toEpochMilli();
        } catch (DateTimeParseException e) {
            return r.fail("X-Amz-Date " + r.amzDate + " is not yyyyMMddTHHmmssZ");
        }
        if (credential == null) {
            return r.fail("X-Amz-Credential missing");
        }
        String[] scope = credential.split("/", -1);
        String date = r.amzDate.substring(0, 8);
        if (scope.length != 5) {
            return r.fail("X-Amz-Credential " + credential + " is not AKID/date/region/service/aws4_request");
        }
        if (!scope[0].equals(expectedAccessKeyId)) {
            return r.fail("unknown access key id " + scope[0]);
        }
        if (!scope[1].equals(date)) {
            return r.fail("credential date " + scope[1] + " is not the date of X-Amz-Date " + r.amzDate);
        }
        if (!scope[2].equals(region)) {
            return r.fail("credential region " + scope[2] + ", expected " + region);
        }
        if (!scope[3].equals(SERVICE) || !scope[4].equals("aws4_request")) {
            return r.fail("credential scope " + credential + " is not for " + SERVICE + "/aws4_request");
        }
        if (!"host".equals(params.get("X-Amz-SignedHeaders"))) {
            return r.fail("X-Amz-SignedHeaders is " + params.get("X-Amz-SignedHeaders") + ", expected host");
        }
        if (r.expires == null || r.expires < 1 || r.expires > MAX_EXPIRES) {
            return r.fail("X-Amz-Expires is " + expires + ", expected 1 to " + MAX_EXPIRES);
        }
        long expiresAtMs = signedMs + r.expires * 1000L;
        if (expiresAtMs <= nowMs) {
            return r.fail("token expired " + (nowMs - expiresAtMs) / 1000 + " s ago (signed " + r.amzDate
                    + ", valid " + r.expires + " s)");
        }
        if (signedMs > nowMs + MAX_CLOCK_SKEW_MS) {
            return r.fail("X-Amz-Date " + r.amzDate + " is more than 5 minutes in the future");
        }
        String signature = params.get("X-Amz-Signature");
        if (signature == null || !signature.matches("[0-9a-f]{64}")) {
            return r.fail("X-Amz-Signature missing or not 64 lowercase hex digits");
        }
        if (r.userAgent == null || r.userAgent.isEmpty()) {
            return r.fail("User-Agent missing");
        }

        // Every parameter but the signature and the unsigned User-Agent, URI-encoded, sorted.
        TreeMap<String, String> canonical = new TreeMap<>();
        params.forEach((k, v) -> {
            if (!k.equals("X-Amz-Signature") && !k.equals("User-Agent")) {
                canonical.put(uriEncode(k), uriEncode(v));
            }
        });
        List<String> query = new ArrayList<>();
        canonical.forEach((k, v) -> query.add(k + "=" + v));
        String canonicalRequest = String.join("\n", "GET", "/", String.join("&", query), "host:" + host, "",
                "host", EMPTY_PAYLOAD_SHA256);
        String scopeTail = date + "/" + region + "/" + SERVICE + "/aws4_request";
        String stringToSign = String.join("\n", ALGORITHM, r.amzDate, scopeTail, hex(sha256(canonicalRequest)));
        byte[] key = hmac(("AWS4" + secretAccessKey).getBytes(StandardCharsets.UTF_8), date);
        key = hmac(key, region);
        key = hmac(key, SERVICE);
        key = hmac(key, "aws4_request");
        String expected = hex(hmac(key, stringToSign));
        if (!MessageDigest.isEqual(expected.getBytes(StandardCharsets.US_ASCII),
                signature.getBytes(StandardCharsets.US_ASCII))) {
            return r.fail("signature mismatch (wrong secret key, or the canonical request differs: "
                    + canonicalRequest.replace("\n", "\\n") + ")");
        }
        r.valid = true;
        r.reason = "ok";
        r.startMs = signedMs;
        r.lifetimeMs = expiresAtMs;
        return r;
    }

    // RFC 3986 unreserved characters stay, everything else is %XX of its UTF-8 bytes (SigV4).
    static String uriEncode(String s) {
        StringBuilder out = new StringBuilder();
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            char c = (char) (b & 0xff);
            if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
                    || c == '-' || c == '_' || c == '.' || c == '~') {
                out.append(c);
            } else {
                out.append('%').append(String.format("%02X", (int) c));
            }
        }
        return out.toString();
    }

    // %XX only: "+" is kept as is (signers encode a space as %20 in signed parameters).
    static String percentDecode(String s) {
        byte[] out = new byte[s.length()];
        int n = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '%') {
                if (i + 2 >= s.length()) {
                    throw new IllegalArgumentException("truncated percent escape");
                }
                out[n++] = (byte) Integer.parseInt(s.substring(i + 1, i + 3), 16);
                i += 2;
            } else if (c > 0x7e || c < 0x21) {
                throw new IllegalArgumentException("unencoded character in URL");
            } else {
                out[n++] = (byte) c;
            }
        }
        return new String(out, 0, n, StandardCharsets.UTF_8);
    }

    static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static byte[] hmac(byte[] key, String data) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static String hex(byte[] bytes) {
        StringBuilder out = new StringBuilder();
        for (byte b : bytes) {
            out.append(String.format("%02x", b));
        }
        return out.toString();
    }

    static String abbreviate(String s) {
        return s.length() <= 200 ? s : s.substring(0, 200) + "...";
    }

    static String quote(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        return out.append('"').toString();
    }

    // Both brokers may append to one file: the in-process lock orders this broker's threads
    // (a FileLock is per JVM), the file lock orders the two JVMs.
    static synchronized void appendLine(Path path, String line) throws IOException {
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.APPEND);
                FileLock lock = channel.lock()) {
            ByteBuffer bytes = ByteBuffer.wrap((line + "\n").getBytes(StandardCharsets.UTF_8));
            while (bytes.hasRemaining()) {
                channel.write(bytes);
            }
        }
    }

    public static void main(String[] args) {
        if (args.length < 5 || args.length > 6 || !args[0].equals("selftest")) {
            System.err.println("usage: MskIamValidator selftest ACCESS_KEY_ID SECRET_ACCESS_KEY REGION TOKEN [NOW]");
            System.exit(2);
        }
        long now = args.length == 6
                ? LocalDateTime.parse(args[5], AMZ_DATE).toInstant(ZoneOffset.UTC).toEpochMilli()
                : System.currentTimeMillis();
        Result result = validate(args[4], args[1], args[2], args[3], now);
        System.out.println(result.json("selftest"));
        System.exit(result.valid ? 0 : 1);
    }
}
