//! No secret leaks: passwords planted in `sasl.jaas.config`, in a Secrets Manager secret and in
//! `ssl.key.password`, each really used to authenticate, appear nowhere in what `plan`, `run`,
//! `translate-offsets` and the Lambda function print (logs at trace level, librdkafka's own
//! debug logs on, reports, EMF lines, the posted response), nor in any record of the flow's
//! internal topics (checkpoints included: a group on A is checkpointed), nor in the CLI's state
//! directory.
//!
//! Apache Kafka stack only (its cluster A serves the secured listeners). The flow writes to
//! B, as every test's does: topics it created on A (`heartbeats`) would be replicated and
//! counted by every other test's flow from A.

#[macro_use]
mod lambda;
#[path = "../../../tests/common/mod.rs"]
mod common;

use std::process::Command;
use std::time::Duration;

use common::secured::{create_scram_user, secured};
use lambda::{Function, RuntimeStub};
use mirrorslice::lease::dynamodb::DynamoLeaseStore;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_in_output_logs_or_internal_topics() {
    let Some(sec) = secured() else { return };
    let stack = common::stack();
    let (source, target) = (
        common::unique("lks").replace('-', ""),
        common::unique("lkt").replace('-', ""),
    );

    // 1. The plants: a literal JAAS password, one kept in Secrets Manager, a key password.
    let jaas_password = sec.scram_password.clone();
    let sm_user = common::unique("sm-user");
    let sm_password = common::unique("sm-planted");
    create_scram_user(&stack.a, &sm_user, &sm_password);
    let secret = common::unique("AmazonMSK_leak");
    let secret_json = serde_json::json!({"username": sm_user, "password": sm_password});
    common::secrets::put_secret(&secret, &secret_json.to_string()).await;
    let key_password = sec.password("client.key.password");
    let plants = [
        jaas_password.as_str(),
        sm_password.as_str(),
        key_password.as_str(),
    ];

    // 2. The flow, from A through three listeners: its admin logs in with the literal JAAS
    // config, its producer (offset syncs) with the Secrets Manager one, its consumer by
    // certificate with the encrypted key. The target is B, plaintext.
    let scram = "org.apache.kafka.common.security.scram.ScramLoginModule required";
    let extra = format!(
        "config.providers = secrets\n\
         config.providers.secrets.class = SecretsManagerConfigProvider\n\
         {source}.security.protocol = SASL_SSL\n\
         {source}.sasl.mechanism = SCRAM-SHA-512\n\
         {source}.sasl.jaas.config = {scram} username=\"{user}\" password=\"{jaas_password}\";\n\
         {source}.producer.sasl.jaas.config = {scram} username=\"${{secrets:{secret}:username}}\" \
             password=\"${{secrets:{secret}:password}}\";\n\
         {source}.ssl.truststore.type = PEM\n\
         {source}.ssl.truststore.location = {ca}\n\
         {source}.consumer.bootstrap.servers = {mtls}\n\
         {source}.consumer.security.protocol = SSL\n\
         {source}.consumer.ssl.keystore.type = PEM\n\
         {source}.consumer.ssl.keystore.location = {keystore}\n\
         {source}.consumer.ssl.key.password = {key_password}\n\
         {target}.offset.flush.interval.ms = 200\n\
         {source}->{target}.groups = .*-{source}\n\
         emit.checkpoints.interval.seconds = 0\n\
         refresh.groups.interval.seconds = 0\n",
        user = sec.scram_user,
        ca = sec.file("ca.pem"),
        mtls = sec.mtls,
        keystore = sec.file("client-keystore.pem"),
    );
    // librdkafka's own debug logs, for every client of both clusters (`rdkafka.` keys are
    // per role).
    let mut extra = extra;
    for alias in [&source, &target] {
        for role in ["consumer", "producer", "admin"] {
            extra.push_str(&format!(
                "{alias}.{role}.rdkafka.debug = security,conf,broker\n"
            ));
        }
    }
    let body = common::flow_properties_between(&source, &sec.sasl_ssl, &target, &stack.b, &extra);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mm2.properties");
    std::fs::write(&config, body).unwrap();
    let topic = format!("orders-{source}");
    common::create_topic(&stack.a, &topic, 2, &[]).await;
    common::produce(&stack.a, &topic, &common::keyed_records(2, 200)).await;
    // A consumer group half way through the topic, for the checkpoint topic to hold records.
    commit_group(&stack.a, &format!("g-{source}"), &topic, 2, 50);

    // 3. Every command, at trace level with librdkafka's debug logs.
    let state = tempfile::tempdir().unwrap();
    let flow = format!("{source}->{target}");
    let cli = |args: &[&str]| {
        let out = Command::new(common::mirrorslice_bin())
            .args(args)
            .envs(stack.env())
            .env("MIRRORSLICE_STATE_DIR", state.path())
            .env("MIRRORSLICE_LOG", "trace")
            .output()
            .expect("run mirrorslice");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let text = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        (out.status.code(), stdout, text)
    };
    let cfg = config.to_str().unwrap();
    let mut printed = Vec::new();
    for args in [
        vec!["plan", cfg],
        vec!["plan", cfg, "--json", "--flow", &flow],
        vec![
            "run",
            cfg,
            "--flow",
            &flow,
            "--json",
            "--max-duration",
            "60s",
        ],
        vec![
            "translate-offsets",
            cfg,
            "--flow",
            &flow,
            "--group",
            "no-such-group",
        ],
    ] {
        let (code, stdout, text) = cli(&args);
        if args[0] == "run" {
            assert_eq!(code, Some(0), "the flow must really run:\n{stdout}");
            let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            // The topic's 200 records, and any heartbeats on A.
            let records = report["slices"][0]["records"].as_u64().unwrap_or_default();
            assert!(records >= 200, "{report:#}");
        }
        printed.push((args.join(" "), text));
    }
    // librdkafka's debug logs were on: the check below reads real client chatter.
    assert!(
        printed[2].1.contains("initialized (builtin.features"),
        "no librdkafka debug output"
    );

    // 4. The Lambda function on the same flow (its own lease table).
    let table = common::unique("leak-leases");
    let leases = DynamoLeaseStore::with_endpoint(&stack.dynamodb, "us-east-1", &table);
    leases.create_table_if_missing().await.unwrap();
    let mut stub = RuntimeStub::start();
    let mut function =
        Function::start_with(&stub.addr, &config, &table, &[("MIRRORSLICE_LOG", "trace")]);
    let posted = stub.invoke(
        "inv-leak",
        serde_json::json!({"flow": flow}),
        Duration::from_secs(60),
    );
    assert_eq!(posted.kind, "response", "{posted:?}");
    stub.finish();
    function.wait_exit(Duration::from_secs(30));
    printed.push((
        "lambda".into(),
        format!("{posted:?}\n{}\n{}", function.stdout(), function.stderr()),
    ));

    // 5. Nothing of it anywhere.
    for (what, text) in &printed {
        assert_no_plant(&plants, what, text);
    }
    let checkpoints = format!("{source}.checkpoints.internal");
    assert!(
        common::has_records(&stack.b, &checkpoints, 1).await,
        "no checkpoint to read in {checkpoints}"
    );
    for (cluster, topic, partitions) in [
        (&stack.b, format!("mm2-configs.{source}.internal"), 1),
        (&stack.b, checkpoints, 1),
        (&stack.b, format!("mm2-offsets.{source}.internal"), 25),
        (&stack.b, format!("mm2-status.{source}.internal"), 5),
        (&stack.b, "heartbeats".to_string(), 1),
        (&stack.a, format!("mm2-offset-syncs.{target}.internal"), 1),
    ] {
        let records = common::consume_all(cluster, &topic, partitions).await;
        let text: String = records
            .iter()
            .map(|r| {
                format!(
                    "{:?} {:?}\n",
                    r.key,
                    r.value.as_deref().map(String::from_utf8_lossy)
                )
            })
            .collect();
        assert_no_plant(&plants, &topic, &text);
    }
    for entry in walk(state.path()) {
        let text = String::from_utf8_lossy(&std::fs::read(&entry).unwrap()).into_owned();
        assert_no_plant(&plants, &entry.display().to_string(), &text);
    }
}

/// Commits `group` at `offset` in each of `topic`'s partitions, as a consumer that stopped
/// there.
fn commit_group(bootstrap: &str, group: &str, topic: &str, partitions: i32, offset: i64) {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .create()
        .expect("consumer");
    let mut offsets = TopicPartitionList::new();
    for partition in 0..partitions {
        offsets
            .add_partition_offset(topic, partition, Offset::Offset(offset))
            .unwrap();
    }
    consumer
        .commit(&offsets, CommitMode::Sync)
        .unwrap_or_else(|e| panic!("commit {group}: {e}"));
}

fn assert_no_plant(plants: &[&str], what: &str, text: &str) {
    for plant in plants {
        if let Some(at) = text.find(plant) {
            let from = text[..at]
                .char_indices()
                .rev()
                .nth(200)
                .map_or(0, |(i, _)| i);
            panic!("a planted secret is in {what}: …{}", &text[from..at]);
        }
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
