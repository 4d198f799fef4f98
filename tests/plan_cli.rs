//! `mirrorslice plan` end to end: the real binary against the local stack's brokers.

mod common;

use serde_json::Value;
use std::process::Command;

fn write_config(body: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::Builder::new()
        .suffix(".properties")
        .tempfile()
        .unwrap();
    std::io::Write::write_all(&mut f, body.as_bytes()).unwrap();
    f
}

fn plan(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(common::mirrorslice_bin())
        .arg("plan")
        .args(args)
        .output()
        .expect("run mirrorslice");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn plan_lists_source_topic_with_remote_name_and_existence() {
    let stack = common::stack();
    let wanted = common::unique("plan-orders");
    let existing = common::unique("plan-present");
    let excluded = common::unique("plan-other");
    common::create_topic(&stack.a, &wanted, 3, &[]).await;
    common::create_topic(&stack.a, &existing, 2, &[]).await;
    common::create_topic(&stack.a, &excluded, 1, &[]).await;
    // The remote copy of `existing` is already on B, with fewer partitions.
    common::create_topic(&stack.b, &format!("A.{existing}"), 1, &[]).await;

    let config = write_config(&format!(
        "clusters = A, B\n\
         A.bootstrap.servers = {a}\n\
         B.bootstrap.servers = {b}\n\
         A->B.enabled = true\n\
         A->B.topics = {wanted}, {existing}\n\
         A->B.tasks.max = 4\n\
         replication.factor = 1\n",
        a = stack.a,
        b = stack.b,
    ));
    let path = config.path().to_str().unwrap();
    let (code, stdout, stderr) = plan(&[path, "--json", "--clusters", "B"]);
    assert_eq!(code, 0, "stderr: {stderr}");
    let plan: Value = serde_json::from_str(&stdout).expect("plan --json is one JSON object");

    // --clusters B keeps only pairs whose target is B: A->B (B->A targets A).
    assert_eq!(plan["herder_pairs"], serde_json::json!(["A->B"]));
    let flow = &plan["flows"][0];
    assert_eq!(flow["flow"], "A->B");
    let topics = flow["topics"].as_array().expect("clusters answered");
    let find = |name: &str| {
        topics
            .iter()
            .find(|t| t["source_topic"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} missing from plan: {topics:?}"))
    };

    let w = find(&wanted);
    assert_eq!(w["remote_topic"], format!("A.{wanted}"));
    assert_eq!(w["partitions"], 3);
    assert_eq!(w["remote_exists"], false);
    assert_eq!(w["action"], "create");

    let e = find(&existing);
    assert_eq!(e["remote_exists"], true);
    assert_eq!(e["remote_partitions"], 1);
    assert_eq!(e["action"], "add-partitions");

    assert!(
        !topics
            .iter()
            .any(|t| t["source_topic"] == excluded.as_str()),
        "{excluded} is not in A->B.topics and must not be planned"
    );
    // 3 + 2 partitions, tasks.max 4.
    assert_eq!(flow["source_tasks"], 4);
}

#[test]
fn plan_text_output_and_both_directions() {
    let stack = common::stack();
    let config = write_config(&format!(
        "clusters=A,B\nA.bootstrap.servers={}\nB.bootstrap.servers={}\nA->B.enabled=true\n",
        stack.a, stack.b
    ));
    let (code, stdout, stderr) = plan(&[config.path().to_str().unwrap()]);
    assert_eq!(code, 0, "stderr: {stderr}");
    // Heartbeats default on: B->A exists although only A->B is enabled (§1.2).
    assert!(stdout.contains("Herder pairs: A->B, B->A"), "{stdout}");
    assert!(
        stdout.contains("Flow B->A (replication disabled)"),
        "{stdout}"
    );
    assert!(stdout.contains("mm2-offsets.A.internal on B"), "{stdout}");
}

#[test]
fn invalid_configs_exit_non_zero_naming_key_or_line() {
    let cases = [
        (
            "clusters=A,B\nA->B.enabled=true\nsecurity.protocol=abc\n",
            "security.protocol",
        ),
        (
            "clusters=A,B\nemit.heartbeats.enabled=false\n",
            "No source->target replication flows",
        ),
        (
            "clusters=A,B\nA->B.enabled=true\nA->B.offset.lag.max=ten\n",
            ":3)",
        ),
        ("clusters=A,B\nbad=\\uZZZZ\n", ":2: Malformed"),
        // What `run` refuses, `plan` refuses too: a guarantee-voiding producer setting and a
        // bad setting of our own.
        (
            "clusters=A,B\nA->B.enabled=true\nB.producer.acks=1\n",
            "B.producer.acks",
        ),
        (
            "clusters=A,B\nA->B.enabled=true\nmirrorslice.lease.skew.allowance=1m\n",
            "mirrorslice.lease.skew.allowance",
        ),
    ];
    for (body, expected) in cases {
        let config = write_config(body);
        let (code, _stdout, stderr) = plan(&[config.path().to_str().unwrap(), "--offline"]);
        assert_ne!(code, 0, "{body:?} must fail");
        assert!(
            stderr.contains(expected),
            "{body:?}: stderr {stderr:?} lacks {expected:?}"
        );
    }
}

#[test]
fn unreachable_cluster_is_reported_and_fails_the_plan() {
    // Port 1 on loopback: nothing listens there.
    let config = write_config(
        "clusters=A,B\nA.bootstrap.servers=127.0.0.1:1\nB.bootstrap.servers=127.0.0.1:1\nA->B.enabled=true\n",
    );
    let (code, stdout, stderr) = plan(&[
        config.path().to_str().unwrap(),
        "--json",
        "--flow",
        "A->B",
        "--timeout",
        "2s",
    ]);
    assert_eq!(code, 1, "stderr: {stderr}");
    let plan: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(plan["clusters"][0]["reachable"], false);
    assert!(plan["flows"][0]["topics"].is_null());
    let problems = plan["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 2, "{problems:?}");
    for (alias, problem) in ["A", "B"].iter().zip(problems) {
        let problem = problem.as_str().unwrap();
        assert!(
            problem.starts_with(&format!("cluster {alias} (127.0.0.1:1): connect:")),
            "{problem}"
        );
        assert!(problem.contains("Connection refused"), "{problem}");
    }
}
