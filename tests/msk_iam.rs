//! MSK IAM end to end: the settings MSK documents for Java clients, unchanged in
//! `mm2.properties`, authenticate every client of `plan` and `run`; and what cannot work (no
//! region, no credential) fails at once naming the cluster.

mod common;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::cli_flow::Flow;
use common::stack;

/// Errors must come before any connection attempt, let alone an API timeout.
const AT_ONCE: Duration = Duration::from_secs(5);

/// The `AWS_MSK_IAM` form, as MSK's documentation writes it, for `alias`.
fn aws_msk_iam(alias: &str, jaas_options: &str) -> String {
    format!(
        "{alias}.security.protocol = SASL_SSL\n\
         {alias}.sasl.mechanism = AWS_MSK_IAM\n\
         {alias}.sasl.jaas.config = software.amazon.msk.auth.iam.IAMLoginModule required{jaas_options};\n\
         {alias}.sasl.client.callback.handler.class = software.amazon.msk.auth.iam.IAMClientCallbackHandler\n"
    )
}

/// `plan` of `flow`, with `env` on top of the stack's environment.
fn plan(flow: &Flow, env: &[(&str, Option<&str>)]) -> Output {
    let mut cmd = Command::new(common::mirrorslice_bin());
    cmd.arg("plan")
        .arg(&flow.config)
        .args(["--flow", &flow.name(), "--json", "--timeout", "30s"])
        .envs(stack().env());
    with_env(&mut cmd, env);
    cmd.output().expect("run mirrorslice plan")
}

/// `run` of `flow`, with `env` on top of the stack's environment.
fn run(flow: &Flow, env: &[(&str, Option<&str>)]) -> Output {
    let mut cmd = flow.command("60s");
    with_env(&mut cmd, env);
    cmd.output().expect("run mirrorslice run")
}

fn with_env(cmd: &mut Command, env: &[(&str, Option<&str>)]) {
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
}

/// `plan` and `run` both exit 1 within [`AT_ONCE`], saying one of `named` (the cluster) and
/// `cause`.
fn assert_fails_at_once(flow: &Flow, env: &[(&str, Option<&str>)], named: &[String], cause: &str) {
    for (command, out) in
        [("plan", plan as fn(&Flow, &[_]) -> Output), ("run", run)].map(|(name, f)| {
            let started = Instant::now();
            let out = f(flow, env);
            let took = started.elapsed();
            assert!(took < AT_ONCE, "{name} took {took:?}");
            (name, out)
        })
    {
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(1), "{command}: {text}");
        assert!(
            named.iter().any(|n| text.contains(n)),
            "{command} does not name the cluster: {text}"
        );
        assert!(text.contains(cause), "{command}: {text}");
    }
}

#[test]
fn without_a_region_plan_and_run_fail_at_once_naming_the_cluster() {
    let s = stack();
    let flow = Flow::between(&s.a, &s.b, "");
    flow.add_config(&aws_msk_iam(&flow.source, ""));
    let env = [("AWS_REGION", None), ("AWS_DEFAULT_REGION", None)];
    let named = [format!("client {}|", flow.source)];
    assert_fails_at_once(&flow, &env, &named, "MSK IAM needs the cluster's region");
}

#[test]
fn without_a_credential_plan_and_run_fail_at_once_naming_the_cluster() {
    let s = stack();
    let dir = tempfile::tempdir().unwrap();
    let nothing = dir.path().join("none");
    let nothing = nothing.to_str().unwrap();
    let no_credential = [
        ("AWS_ACCESS_KEY_ID", None),
        ("AWS_SECRET_ACCESS_KEY", None),
        ("AWS_SESSION_TOKEN", None),
        ("AWS_CONFIG_FILE", Some(nothing)),
        ("AWS_SHARED_CREDENTIALS_FILE", Some(nothing)),
        ("AWS_EC2_METADATA_DISABLED", Some("true")),
    ];
    let flow = Flow::between(&s.a, &s.b, "");
    flow.add_config(&aws_msk_iam(&flow.source, ""));
    let named = [format!("client {}|", flow.source)];
    assert_fails_at_once(
        &flow,
        &no_credential,
        &named,
        "MSK IAM: no credential from the default AWS credential chain",
    );
    // A profile that is not there is named.
    let flow = Flow::between(&s.a, &s.b, "");
    flow.add_config(&aws_msk_iam(&flow.source, " awsProfileName=\"dr\""));
    let named = [format!("client {}|", flow.source)];
    assert_fails_at_once(
        &flow,
        &no_credential,
        &named,
        "no credential from AWS profile",
    );
}

/// Every token the validator saw that is this test's (the stack's key, this validity: the other
/// tests of this binary share the validator's log and use another key or validity) is valid and
/// ours (user agent), and there were some: a client without a token could not have connected.
fn assert_valid_tokens(
    iam: &common::iam::Iam,
    tokens: &mut Vec<serde_json::Value>,
    what: &str,
    validity_secs: u64,
) {
    tokens.retain(|t| {
        t["access_key_id"] == iam.access_key_id.as_str() && t["expires"] == validity_secs
    });
    assert!(!tokens.is_empty(), "{what}: no token reached the listeners");
    for t in tokens {
        assert_eq!(t["valid"], true, "{what}: {t}");
        let agent = t["user_agent"].as_str().unwrap_or_default();
        assert!(agent.starts_with("mirrorslice/"), "{what}: {t}");
    }
}

fn clusters_seen(tokens: &[serde_json::Value]) -> std::collections::BTreeSet<String> {
    tokens
        .iter()
        .filter_map(|t| t["cluster"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn every_client_of_plan_run_translate_and_failover_presents_a_valid_token() {
    let Some(iam) = common::iam::iam() else {
        return;
    };
    let s = stack();
    let flow = Flow::between(&iam.a, &iam.b, "");
    flow.add_config(&iam.settings(&flow.source));
    let topic = format!("orders-{}", flow.source);
    common::create_topic(&s.a, &topic, 2, &[]).await;
    common::produce(&s.a, &topic, &common::keyed_records(2, 300)).await;
    let group = common::unique("iam-group");
    commit_on_a(&group, &topic).await;
    let env: Vec<(String, String)> = iam.env().into_iter().map(|(k, v)| (k.into(), v)).collect();
    let env: Vec<(&str, Option<&str>)> = env
        .iter()
        .map(|(k, v)| (k.as_str(), Some(v.as_str())))
        .collect();

    let mark = iam.mark();
    let out = plan(&flow, &env);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let mut tokens = iam.tokens_since(mark);
    assert_valid_tokens(iam, &mut tokens, "plan", 900);
    assert_eq!(clusters_seen(&tokens), ["a", "b"].map(String::from).into());

    let mark = iam.mark();
    let out = run(&flow, &env);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{report:#}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(report["slices"][0]["records"], 300, "{report:#}");
    let duplicates = common::assert_all_copied(&s.b, &flow.remote(&topic), 2, 300).await;
    assert_eq!(duplicates, 0);
    let mut tokens = iam.tokens_since(mark);
    assert_valid_tokens(iam, &mut tokens, "run", 900);
    assert_eq!(clusters_seen(&tokens), ["a", "b"].map(String::from).into());

    for command in ["translate-offsets", "failover"] {
        let mark = iam.mark();
        let mut cmd = Command::new(common::mirrorslice_bin());
        cmd.arg(command).arg(&flow.config).args([
            "--flow",
            &flow.name(),
            "--group",
            &group,
            "--json",
        ]);
        with_env(&mut cmd, &env);
        let out = cmd.output().expect("run mirrorslice");
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "{command}: {text}");
        let mut tokens = iam.tokens_since(mark);
        assert_valid_tokens(iam, &mut tokens, command, 900);
        assert!(
            clusters_seen(&tokens).contains("b"),
            "{command}: {tokens:?}"
        );
    }
}

/// A consumer group on A with offsets for `topic`, for the checkpoints to translate.
async fn commit_on_a(group: &str, topic: &str) {
    use rdkafka::admin::AdminClient;
    use rdkafka::client::DefaultClientContext;
    let admin: AdminClient<DefaultClientContext> = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", &stack().a)
        .create()
        .expect("admin client");
    let offsets = [
        (topic.to_string(), 0, 100, String::new()),
        (topic.to_string(), 1, 50, String::new()),
    ];
    let results = mirrorslice::kafka::admin_ext::alter_consumer_group_offsets(
        &admin,
        group,
        &offsets,
        Duration::from_secs(30),
    )
    .await
    .expect("commit on A");
    assert!(results.iter().all(|r| r.1.is_ok()), "{results:?}");
}

#[test]
fn a_rejected_token_fails_plan_and_run_at_once_naming_the_cluster() {
    let Some(iam) = common::iam::iam() else {
        return;
    };
    let flow = Flow::between(&iam.a, &iam.b, "");
    flow.add_config(&iam.settings(&flow.source));
    // A key the listeners do not know: the other tests of this binary, which share the
    // validator's log, only look at the stack's key.
    let mut env = iam.env();
    env.retain(|(k, _)| *k != "AWS_ACCESS_KEY_ID");
    let env: Vec<(&str, Option<&str>)> = (env.iter().map(|(k, v)| (*k, Some(v.as_str()))))
        .chain([("AWS_ACCESS_KEY_ID", Some("AKIAUNKNOWNTOTHEM000"))])
        .collect();
    // Both clusters refuse it; whichever answers first is named.
    let named = [
        format!("cluster {} ({})", flow.source, iam.a),
        format!("cluster {} ({})", flow.target, iam.b),
    ];
    assert_fails_at_once(&flow, &env, &named, "SASL authentication error");
    // And the listeners did refuse that key (the check above cannot tell it from a bug).
    let refused = iam.tokens_since(0);
    assert!(refused
        .iter()
        .any(|t| t["access_key_id"] == "AKIAUNKNOWNTOTHEM000" && t["valid"] == false));
}

/// A slice longer than its tokens: the broker ends each session when its token expires
/// (KIP-368), so every connection must re-authenticate with a refreshed token, and the copy
/// only completes if all of them did. Tokens last 4 s (`MIRRORSLICE_MSK_IAM_TOKEN_SECONDS`);
/// the copy's fetches are made to wait 1 s each (a `fetch.min.bytes` the topic never reaches)
/// and bring one record batch, for 12 batches: the slice lasts ~12 s, three token lifetimes.
#[tokio::test]
async fn a_slice_longer_than_its_tokens_refreshes_them() {
    const VALIDITY_SECS: u64 = 4;
    const BATCHES: usize = 12;
    let Some(iam) = common::iam::iam() else {
        return;
    };
    let s = stack();
    let flow = Flow::between(&iam.a, &iam.b, "");
    flow.add_config(&iam.settings(&flow.source));
    flow.add_config(&format!(
        "{a}.consumer.fetch.min.bytes = 100000000\n\
         {a}.consumer.fetch.max.wait.ms = 1000\n\
         {a}.consumer.max.partition.fetch.bytes = 1\n",
        a = flow.source
    ));
    let topic = format!("refresh-{}", flow.source);
    common::create_topic(&s.a, &topic, 1, &[]).await;
    // One batch per produce call: a fetch brings at least one whole batch (KIP-74).
    for i in 0..BATCHES {
        common::produce(
            &s.a,
            &topic,
            &[common::TestRecord::kv(0, &format!("k{i}"), "v")],
        )
        .await;
    }
    let mut env: Vec<(String, String)> = (iam.env().into_iter())
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    env.push((
        "MIRRORSLICE_MSK_IAM_TOKEN_SECONDS".into(),
        VALIDITY_SECS.to_string(),
    ));
    let env: Vec<(&str, Option<&str>)> = (env.iter())
        .map(|(k, v)| (k.as_str(), Some(v.as_str())))
        .collect();

    let mark = iam.mark();
    let started = Instant::now();
    let out = run(&flow, &env);
    let took = started.elapsed();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{report:#}\n{stderr}");
    assert_eq!(report["slices"][0]["records"], BATCHES, "{report:#}");
    let duplicates = common::assert_all_copied(&s.b, &flow.remote(&topic), 1, BATCHES).await;
    assert_eq!(duplicates, 0);
    // Otherwise the fetches did not hold the copy back and nothing here was tested.
    assert!(
        took > Duration::from_secs(2 * VALIDITY_SECS),
        "the slice took {took:?}, not longer than two token lifetimes"
    );
    let mut tokens = iam.tokens_since(mark);
    assert_valid_tokens(iam, &mut tokens, "run", VALIDITY_SECS);
    // Re-authentications all along, each with a token signed within its validity.
    let signed_at: std::collections::BTreeSet<&str> = (tokens.iter())
        .filter(|t| t["cluster"] == "a")
        .filter_map(|t| t["amz_date"].as_str())
        .collect();
    let expected = (took.as_secs() / VALIDITY_SECS) as usize;
    assert!(
        signed_at.len() >= expected,
        "{} tokens for a {took:?} slice with {VALIDITY_SECS} s tokens: {signed_at:?}",
        signed_at.len()
    );
}
