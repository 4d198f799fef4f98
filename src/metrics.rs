//! CloudWatch metrics for a slice, as one Embedded Metric Format (EMF) log line.
//!
//! Why EMF: a Lambda function can publish metrics without a `PutMetricData` call (no extra
//! latency before the deadline, no IAM permission, no SDK): CloudWatch Logs recognises a JSON
//! line with an `_aws.CloudWatchMetrics` directive and turns the named members into metrics.
//! One line per slice, dimension `Flow`, namespace `mirrorslice`, gives per-flow dashboards and
//! alarms on replication lag and RPO for free.
//!
//! The line must be written straight to stdout (`println!`), not through `tracing`: a log
//! formatter would wrap it in its own JSON object and CloudWatch would no longer see the
//! directive at the top level. Building it is a pure function of the report, so it is tested
//! here without any AWS.
//!
//! | metric | unit | value |
//! |---|---|---|
//! | `Records` | Count | records copied this slice |
//! | `Bytes` | Bytes | key + value + header bytes copied |
//! | `Lag` | Count | records left behind (omitted when unknown, e.g. a task held elsewhere) |
//! | `DurationMs` | Milliseconds | slice wall time |
//! | `RpoMs` | Milliseconds | age of the newest record copied (omitted when nothing was copied) |
//! | `CaughtUp` | Count | 1 when every task ran here and caught up, else 0 |
//! | `EstimatedCostUsd` | None | Lambda compute cost of the slice |
//!
//! A metric without a value is left out of both the directive and the body: EMF rejects a
//! directive that names a missing member, and a made-up 0 would hide "unknown" in a graph.

use crate::report::SliceReport;
use serde_json::{json, Map, Value};

/// CloudWatch namespace of every mirrorslice metric.
pub const NAMESPACE: &str = "mirrorslice";
/// The one dimension: the herder pair, written `source->target`.
pub const FLOW_DIMENSION: &str = "Flow";

/// The EMF line for `report`, stamped `timestamp_ms` (epoch milliseconds). No trailing newline.
pub fn emf_line(report: &SliceReport, timestamp_ms: i64) -> String {
    let mut metrics: Vec<(&str, &str, Value)> = vec![
        ("Records", "Count", json!(report.records)),
        ("Bytes", "Bytes", json!(report.bytes)),
    ];
    if let Some(lag) = report.lag {
        metrics.push(("Lag", "Count", json!(lag)));
    }
    metrics.push(("DurationMs", "Milliseconds", json!(report.duration_ms)));
    if let Some(rpo) = report.rpo_ms {
        metrics.push(("RpoMs", "Milliseconds", json!(rpo)));
    }
    metrics.push(("CaughtUp", "Count", json!(u8::from(report.caught_up))));
    metrics.push(("EstimatedCostUsd", "None", json!(report.estimated_cost_usd)));

    let directive: Vec<Value> = metrics
        .iter()
        .map(|(name, unit, _)| json!({ "Name": name, "Unit": unit }))
        .collect();
    let mut line = Map::new();
    line.insert(
        "_aws".into(),
        json!({
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [[FLOW_DIMENSION]],
                "Metrics": directive,
            }],
        }),
    );
    line.insert(FLOW_DIMENSION.into(), json!(report.flow));
    for (name, _, value) in metrics {
        line.insert(name.into(), value);
    }
    // Plain properties (not metrics): searchable with Logs Insights next to the numbers.
    line.insert("ok".into(), json!(report.ok));
    line.insert("worker_id".into(), json!(report.worker_id));
    line.insert(
        "deadline_margin_ms".into(),
        json!(report.deadline_margin_ms),
    );
    Value::Object(line).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::ConnectorActivity;

    fn report(lag: Option<i64>, rpo: Option<i64>, caught_up: bool) -> SliceReport {
        SliceReport {
            flow: "us-east->eu-west".into(),
            worker_id: "w-1".into(),
            started_at: "2024-01-01T00:00:00Z".into(),
            duration_ms: 1234,
            deadline_margin_ms: 2100,
            ok: true,
            caught_up,
            records: 42,
            bytes: 4200,
            lag,
            newest_record_age_ms: rpo.map(|r| r + 1),
            oldest_record_age_ms: rpo.map(|r| r + 10),
            rpo_ms: rpo,
            source_tasks: 1,
            connector: ConnectorActivity::default(),
            tasks: vec![],
            checkpoints: Default::default(),
            heartbeats: Default::default(),
            gaps: vec![],
            errors: vec![],
            memory_mb: 1024,
            gb_seconds: 1.234,
            estimated_cost_usd: 0.0000164,
        }
    }

    fn directive(line: &Value) -> &Value {
        &line["_aws"]["CloudWatchMetrics"][0]
    }

    /// Every metric the directive names, with its unit, in order.
    fn declared(line: &Value) -> Vec<(String, String)> {
        directive(line)["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["Name"].as_str().unwrap().to_string(),
                    m["Unit"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn one_json_line_with_the_cloudwatch_metrics_directive() {
        let text = emf_line(&report(Some(7), Some(350), true), 1_700_000_000_123);
        assert!(!text.contains('\n'), "one line: {text}");
        let line: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(line["_aws"]["Timestamp"], 1_700_000_000_123i64);
        let d = directive(&line);
        assert_eq!(d["Namespace"], NAMESPACE);
        assert_eq!(d["Dimensions"], json!([["Flow"]]));
        assert_eq!(
            declared(&line),
            [
                ("Records", "Count"),
                ("Bytes", "Bytes"),
                ("Lag", "Count"),
                ("DurationMs", "Milliseconds"),
                ("RpoMs", "Milliseconds"),
                ("CaughtUp", "Count"),
                ("EstimatedCostUsd", "None"),
            ]
            .map(|(n, u)| (n.to_string(), u.to_string()))
        );
        // The dimension and every declared metric are top-level members with the report's values.
        assert_eq!(line["Flow"], "us-east->eu-west");
        assert_eq!(line["Records"], 42);
        assert_eq!(line["Bytes"], 4200);
        assert_eq!(line["Lag"], 7);
        assert_eq!(line["DurationMs"], 1234);
        assert_eq!(line["RpoMs"], 350);
        assert_eq!(line["CaughtUp"], 1);
        assert_eq!(line["EstimatedCostUsd"], 0.0000164);
        for (name, _) in declared(&line) {
            assert!(line[&name].is_number(), "{name} is a number");
        }
    }

    #[test]
    fn unknown_values_are_left_out_not_zero() {
        let line: Value = serde_json::from_str(&emf_line(&report(None, None, false), 1)).unwrap();
        let names: Vec<String> = declared(&line).into_iter().map(|(n, _)| n).collect();
        assert!(!names.contains(&"Lag".to_string()), "{names:?}");
        assert!(!names.contains(&"RpoMs".to_string()), "{names:?}");
        assert!(line.get("Lag").is_none() && line.get("RpoMs").is_none());
        assert_eq!(line["CaughtUp"], 0);
        assert_eq!(names.len(), 5);
    }
}
