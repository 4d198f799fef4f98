//! The SAM template grants what the function needs and nothing more (cfn-lint checks the
//! syntax in `infra/local/test.sh`; these check the meaning of the statements we rely on).
//!
//! The MSK statements are built from parameters with intrinsic functions, so those tests render
//! the role's policies the way CloudFormation would: [`decoded`] reads the template with
//! cfn-lint's decoder and [`Render`] evaluates `Ref`, `Fn::If`, `Fn::Sub`, `Fn::Join`,
//! `Fn::Split`, `Fn::Select` and the conditions for a given set of parameter values.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{json, Map, Value};

const TEMPLATE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/template.yaml");

fn template() -> String {
    std::fs::read_to_string(TEMPLATE).expect("template.yaml")
}

/// The template as cfn-lint decodes it: short-form tags in their long form (`!Ref X` is
/// `{"Ref": "X"}`). cfn-lint is the project's CloudFormation reader (`infra/local/test.sh`
/// installs it), so these tests read the template as the linter does.
fn decoded() -> &'static Value {
    static DECODED: OnceLock<Value> = OnceLock::new();
    DECODED.get_or_init(|| {
        const INSTALL: &str = "run `python3 -m pip install cfn-lint`";
        let script = "import json, sys\n\
            from cfnlint.decode import decode\n\
            t, m = decode(sys.argv[1])\n\
            assert not m, m\n\
            print(json.dumps(t))";
        let out = Command::new("python3")
            .args(["-c", script, TEMPLATE])
            .output()
            .unwrap_or_else(|e| panic!("python3 is needed to read template.yaml ({e}): {INSTALL}"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains("No module named 'cfnlint'") {
            panic!("cfn-lint is not installed for python3: {INSTALL}\n{stderr}");
        }
        assert!(
            out.status.success(),
            "cfn-lint could not decode template.yaml ({INSTALL} if it is missing):\n{stderr}"
        );
        serde_json::from_slice(&out.stdout).expect("cfn-lint's JSON")
    })
}

/// A scalar as CloudFormation passes it: decoded YAML keeps numbers (`Default: 300`) typed.
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(_) | Value::Bool(_) => v.to_string(),
        other => panic!("not a scalar: {other}"),
    }
}

/// The indented block of lines starting at the first line containing `needle`.
fn block_after<'a>(text: &'a str, needle: &str, lines: usize) -> Vec<&'a str> {
    let start = text
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("template.yaml has no {needle:?}"));
    text.lines().skip(start).take(lines).collect()
}

#[test]
fn secrets_are_readable_only_as_listed_and_decrypted_only_through_secrets_manager() {
    let t = template();
    let get = block_after(&t, "Action: secretsmanager:GetSecretValue", 2);
    assert_eq!(get[1].trim(), "Resource: !Ref SecretArns", "{get:?}");
    let decrypt = block_after(&t, "Action: kms:Decrypt", 5);
    assert_eq!(
        decrypt[1].trim(),
        "Resource: !Ref SecretsKmsKeyArn",
        "{decrypt:?}"
    );
    assert!(
        decrypt[4].contains("kms:ViaService") && decrypt[4].contains("secretsmanager."),
        "{decrypt:?}"
    );
    // Nothing else reaches secrets or keys, and no statement is a wildcard.
    assert_eq!(t.matches("secretsmanager:").count(), 1);
    assert_eq!(t.matches("kms:Decrypt").count(), 1);
    assert!(!t.contains("Resource: \"*\"") && !t.contains("Resource: '*'"));
    // Without secret ARNs the statement is not there at all.
    assert!(t.contains("HasSecrets: !Not [!Equals [!Join [\"\", !Ref SecretArns], \"\"]]"));
}

// ---------------------------------------------------------------------------------------------
// MSK IAM access control
// ---------------------------------------------------------------------------------------------

const SOURCE: &str =
    "arn:aws:kafka:eu-west-1:111122223333:cluster/prod-a/0a1b2c3d-1111-2222-3333-444455556666-7";
const SOURCE_TOPIC: &str =
    "arn:aws:kafka:eu-west-1:111122223333:topic/prod-a/0a1b2c3d-1111-2222-3333-444455556666-7";
const SOURCE_GROUP: &str =
    "arn:aws:kafka:eu-west-1:111122223333:group/prod-a/0a1b2c3d-1111-2222-3333-444455556666-7";
const TARGET: &str =
    "arn:aws:kafka:eu-central-1:444455556666:cluster/prod-b/9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff-2";
const TARGET_TOPIC: &str =
    "arn:aws:kafka:eu-central-1:444455556666:topic/prod-b/9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff-2";
const TARGET_GROUP: &str =
    "arn:aws:kafka:eu-central-1:444455556666:group/prod-b/9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff-2";

/// One rendered policy statement.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Statement {
    policy: String,
    actions: BTreeSet<String>,
    resources: BTreeSet<String>,
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn kafka(actions: &[&str]) -> BTreeSet<String> {
    actions
        .iter()
        .map(|a| format!("kafka-cluster:{a}"))
        .collect()
}

fn statement(policy: &str, actions: &[&str], resources: &[String]) -> Statement {
    Statement {
        policy: policy.into(),
        actions: kafka(actions),
        resources: resources.iter().cloned().collect(),
    }
}

/// `MirrorRole`'s statements with these parameter values (the others at their defaults).
fn role_statements(params: &[(&str, &str)]) -> Vec<Statement> {
    let r = Render::new(params);
    let policies = r.eval(&r.template["Resources"]["MirrorRole"]["Properties"]["Policies"]);
    let mut out = Vec::new();
    for p in policies.as_array().expect("Policies is a list") {
        let name = p["PolicyName"].as_str().expect("PolicyName").to_string();
        for s in p["PolicyDocument"]["Statement"]
            .as_array()
            .expect("Statement")
        {
            assert_eq!(s["Effect"], "Allow", "{s:#}");
            out.push(Statement {
                policy: name.clone(),
                actions: strings(&s["Action"]),
                resources: strings(&s["Resource"]),
            });
        }
    }
    out
}

/// The statements granting `kafka-cluster:` actions, sorted.
fn msk_statements(params: &[(&str, &str)]) -> Vec<Statement> {
    let mut out: Vec<Statement> = role_statements(params)
        .into_iter()
        .filter(|s| s.actions.iter().any(|a| a.starts_with("kafka-cluster:")))
        .collect();
    out.sort();
    out
}

fn sorted(mut statements: Vec<Statement>) -> Vec<Statement> {
    statements.sort();
    statements
}

fn strings(v: &Value) -> BTreeSet<String> {
    match v {
        Value::String(s) => set(&[s.as_str()]),
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().expect("a string").to_string())
            .collect(),
        other => panic!("not a string or list: {other}"),
    }
}

const BOTH: &[(&str, &str)] = &[
    ("SourceClusterArn", SOURCE),
    ("TargetClusterArn", TARGET),
    ("SourceClusterAlias", "A"),
];

#[test]
fn without_cluster_arns_no_msk_right_is_granted() {
    let statements = role_statements(&[]);
    let policies: BTreeSet<String> = statements.iter().map(|s| s.policy.clone()).collect();
    assert_eq!(policies, set(&["lease-table", "logs"]));
    // An alias or a topic pattern alone grants nothing either.
    let statements = role_statements(&[
        ("SourceClusterAlias", "A"),
        ("SourceTopicPattern", "orders.*"),
    ]);
    assert!(
        statements
            .iter()
            .all(|s| s.actions.iter().all(|a| !a.starts_with("kafka-cluster:"))),
        "{statements:#?}"
    );
}

#[test]
fn the_source_cluster_is_read_and_only_its_offset_syncs_topic_written() {
    let topics = |names: &[&str]| -> Vec<String> {
        names
            .iter()
            .map(|n| format!("{SOURCE_TOPIC}/{n}"))
            .collect()
    };
    let expected = sorted(vec![
        statement(
            "msk-source",
            &["Connect", "DescribeCluster", "WriteDataIdempotently"],
            &[SOURCE.to_string()],
        ),
        statement(
            "msk-source",
            &[
                "ReadData",
                "DescribeTopic",
                "DescribeTopicDynamicConfiguration",
            ],
            &topics(&["*", "heartbeats", "*.heartbeats"]),
        ),
        statement(
            "msk-source",
            &["CreateTopic", "DescribeTopic", "WriteData", "ReadData"],
            &topics(&["mm2-offset-syncs.*.internal"]),
        ),
        statement(
            "msk-source",
            &["DescribeGroup"],
            &[format!("{SOURCE_GROUP}/*")],
        ),
    ]);
    assert_eq!(msk_statements(&[("SourceClusterArn", SOURCE)]), expected);
    // The alias only names target topics.
    assert_eq!(
        msk_statements(&[("SourceClusterArn", SOURCE), ("SourceClusterAlias", "A")]),
        expected
    );
}

#[test]
fn the_target_cluster_is_written_only_under_the_source_alias() {
    let topics = |names: &[&str]| -> Vec<String> {
        names
            .iter()
            .map(|n| format!("{TARGET_TOPIC}/{n}"))
            .collect()
    };
    let expected = sorted(vec![
        statement(
            "msk-target",
            &["Connect", "DescribeCluster", "WriteDataIdempotently"],
            &[TARGET.to_string()],
        ),
        statement(
            "msk-target",
            &[
                "CreateTopic",
                "DescribeTopic",
                "AlterTopic",
                "WriteData",
                "ReadData",
                "DescribeTopicDynamicConfiguration",
                "AlterTopicDynamicConfiguration",
            ],
            &topics(&["A.*", "A.heartbeats", "A.*.heartbeats"]),
        ),
        statement(
            "msk-target",
            &[
                "CreateTopic",
                "DescribeTopic",
                "WriteData",
                "ReadData",
                "DescribeTopicDynamicConfiguration",
            ],
            &topics(&["mm2-*.A.internal", "A.checkpoints.internal", "heartbeats"]),
        ),
        statement(
            "msk-target",
            &["DescribeGroup", "AlterGroup"],
            &[format!("{TARGET_GROUP}/*")],
        ),
    ]);
    assert_eq!(
        msk_statements(&[("TargetClusterArn", TARGET), ("SourceClusterAlias", "A")]),
        expected
    );
    // Both sides: each policy as on its own, nothing more.
    let both = msk_statements(BOTH);
    let (source, target): (Vec<_>, Vec<_>) =
        both.into_iter().partition(|s| s.policy == "msk-source");
    assert_eq!(target, expected);
    assert_eq!(source, msk_statements(&[("SourceClusterArn", SOURCE)]));
}

#[test]
fn the_topic_pattern_narrows_source_reads_and_remote_topics() {
    let mut params = BOTH.to_vec();
    params.push(("SourceTopicPattern", "orders.*"));
    let statements = msk_statements(&params);
    let reads = statements
        .iter()
        .find(|s| {
            s.policy == "msk-source"
                && s.actions.contains("kafka-cluster:ReadData")
                && !s.actions.contains("kafka-cluster:WriteData")
        })
        .expect("the source read statement");
    assert_eq!(
        reads.resources,
        set(&[
            &format!("{SOURCE_TOPIC}/orders.*"),
            &format!("{SOURCE_TOPIC}/heartbeats"),
            &format!("{SOURCE_TOPIC}/*.heartbeats"),
        ])
    );
    let remote = statements
        .iter()
        .find(|s| s.actions.contains("kafka-cluster:AlterTopic"))
        .expect("the remote topics statement");
    assert_eq!(
        remote.resources,
        set(&[
            &format!("{TARGET_TOPIC}/A.orders.*"),
            &format!("{TARGET_TOPIC}/A.heartbeats"),
            &format!("{TARGET_TOPIC}/A.*.heartbeats"),
        ])
    );
    // Nothing else depends on the pattern.
    let default = msk_statements(BOTH);
    assert_eq!(statements.len(), default.len());
    let unchanged = |s: &&Statement| s.resources.iter().all(|r| !r.contains("orders"));
    assert_eq!(
        statements.iter().filter(unchanged).count(),
        default.len() - 2
    );
}

#[test]
fn msk_rights_have_no_wildcard_action_and_stay_on_the_named_clusters() {
    let mut params = BOTH.to_vec();
    params.push(("SourceTopicPattern", "orders.*"));
    for params in [BOTH.to_vec(), params] {
        for s in role_statements(&params) {
            let msk = s.policy.starts_with("msk-");
            for a in &s.actions {
                // Only the msk policies name kafka-cluster actions, and only the msk policies
                // grant anything but their own service's.
                assert_eq!(a.starts_with("kafka-cluster:"), msk, "{s:#?}");
                assert!(!a.contains('*'), "wildcard action in {s:#?}");
            }
            if !msk {
                continue;
            }
            let (cluster, topic, group) = if s.policy == "msk-source" {
                (SOURCE, SOURCE_TOPIC, SOURCE_GROUP)
            } else {
                assert_eq!(s.policy, "msk-target");
                (TARGET, TARGET_TOPIC, TARGET_GROUP)
            };
            for r in &s.resources {
                assert!(
                    r == cluster
                        || r.starts_with(&format!("{topic}/"))
                        || r.starts_with(&format!("{group}/")),
                    "{r} is not on {cluster}: {s:#?}"
                );
            }
            // Cluster-level actions on the cluster ARN only; topic and group actions on
            // topics and groups only.
            let on_cluster = s.resources.iter().all(|r| r == cluster);
            let cluster_actions = kafka(&["Connect", "DescribeCluster", "WriteDataIdempotently"]);
            assert_eq!(on_cluster, s.actions.is_subset(&cluster_actions), "{s:#?}");
        }
    }
    let t = template();
    assert!(!t.contains("kafka-cluster:*"));
    assert!(!t.contains("AlterCluster") && !t.contains("DeleteTopic"));
    assert!(!t.contains("TransactionalId"));
}

/// The "Required actions" column of
/// <https://docs.aws.amazon.com/msk/latest/developerguide/kafka-actions.html>, for the actions
/// the template grants: each comes with what it depends on, on the same resources. (ReadData
/// also lists AlterGroup, for consumers that join a group; ours never do: they are assigned
/// their partitions and commit nothing on the clusters they read.)
#[test]
fn msk_actions_come_with_the_actions_they_depend_on() {
    let depends: &[(&str, &[&str])] = &[
        ("DescribeCluster", &["Connect"]),
        ("WriteDataIdempotently", &["Connect"]),
        ("AlterTopic", &["DescribeTopic"]),
        (
            "AlterTopicDynamicConfiguration",
            &["DescribeTopicDynamicConfiguration"],
        ),
        ("ReadData", &["DescribeTopic"]),
        ("WriteData", &["DescribeTopic"]),
        ("AlterGroup", &["DescribeGroup"]),
    ];
    let statements = msk_statements(BOTH);
    for s in &statements {
        for (action, needs) in depends {
            if s.actions.contains(&format!("kafka-cluster:{action}")) {
                assert!(s.actions.is_superset(&kafka(needs)), "{action}: {s:#?}");
            }
        }
    }
    // Every topic and group action needs Connect, and WriteDataIdempotently needs WriteData
    // somewhere on the same cluster.
    for policy in ["msk-source", "msk-target"] {
        let granted: BTreeSet<String> = statements
            .iter()
            .filter(|s| s.policy == policy)
            .flat_map(|s| s.actions.iter().cloned())
            .collect();
        assert!(
            granted.is_superset(&kafka(&["Connect", "WriteData"])),
            "{policy}"
        );
    }
}

#[test]
fn a_target_cluster_needs_the_source_alias() {
    let rule = |params: &[(&str, &str)]| {
        let r = Render::new(params);
        r.rule_holds("TargetClusterNeedsSourceAlias")
    };
    assert!(rule(&[]));
    assert!(rule(&[("SourceClusterArn", SOURCE)]));
    assert!(!rule(&[("TargetClusterArn", TARGET)]));
    assert!(rule(&[
        ("TargetClusterArn", TARGET),
        ("SourceClusterAlias", "A")
    ]));
}

#[test]
fn msk_parameters_accept_cluster_arns_and_refuse_lists_and_other_resources() {
    let r = Render::new(&[]);
    let allowed = |param: &str, value: &str| {
        let pattern = r.template["Parameters"][param]["AllowedPattern"]
            .as_str()
            .unwrap_or_else(|| panic!("{param} has no AllowedPattern"));
        fancy_regex::Regex::new(pattern)
            .unwrap()
            .is_match(value)
            .unwrap()
    };
    for p in ["SourceClusterArn", "TargetClusterArn"] {
        assert!(allowed(p, ""));
        assert!(allowed(p, SOURCE));
        assert!(allowed(
            p,
            "arn:aws-cn:kafka:cn-north-1:111122223333:cluster/c/0a1b2c3d-1"
        ));
        assert!(!allowed(p, &format!("{SOURCE},{TARGET}")));
        assert!(!allowed(p, &format!("{SOURCE_TOPIC}/orders")));
        assert!(!allowed(p, &format!("{SOURCE}/x")));
        assert!(!allowed(
            p,
            "arn:aws:kafka:eu-west-1:111122223333:cluster/*"
        ));
        assert!(!allowed(
            p,
            "arn:aws:kafka:eu-west-1:111122223333:cluster/*/*"
        ));
    }
    assert!(allowed("SourceClusterAlias", "A"));
    assert!(allowed("SourceClusterAlias", "us-east_1"));
    for bad in ["A,B", "*", "a/b"] {
        assert!(!allowed("SourceClusterAlias", bad), "{bad}");
    }
    for good in ["*", "orders.*", "orders-?", "a_b.c"] {
        assert!(allowed("SourceTopicPattern", good), "{good}");
    }
    for bad in ["", "orders.*,payments.*", "a/b", "orders.+"] {
        assert!(!allowed("SourceTopicPattern", bad), "{bad}");
    }
}

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

/// The template with parameter values, evaluating intrinsic functions as CloudFormation does.
struct Render {
    template: &'static Value,
    params: BTreeMap<String, Value>,
}

impl Render {
    fn new(overrides: &[(&str, &str)]) -> Render {
        let template = decoded();
        let mut params = BTreeMap::new();
        let declared = template["Parameters"].as_object().expect("Parameters");
        for (name, _) in overrides {
            assert!(declared.contains_key(*name), "no parameter {name}");
        }
        for (name, p) in declared {
            let given = overrides.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
            let default = p.get("Default").map(scalar);
            let value = given
                .or(default.as_deref())
                .unwrap_or_else(|| panic!("{name} needs a value"));
            let value = if p["Type"] == "CommaDelimitedList" {
                json!(value.split(',').collect::<Vec<_>>())
            } else {
                json!(value)
            };
            params.insert(name.clone(), value);
        }
        Render { template, params }
    }

    /// `v` evaluated; `None` is `AWS::NoValue` (dropped from lists and mappings).
    fn eval_opt(&self, v: &Value) -> Option<Value> {
        match v {
            Value::Array(items) => Some(Value::Array(
                items.iter().filter_map(|i| self.eval_opt(i)).collect(),
            )),
            Value::Object(m) if m.len() == 1 => {
                let (k, arg) = m.iter().next().unwrap();
                match k.as_str() {
                    "Ref" => self.reference(arg.as_str().expect("Ref name")),
                    "Fn::If" => {
                        let a = arg.as_array().expect("Fn::If args");
                        let name = a[0].as_str().expect("condition name");
                        self.eval_opt(&a[if self.condition(name) { 1 } else { 2 }])
                    }
                    "Fn::Sub" => Some(json!(self.sub(arg))),
                    "Fn::Join" => {
                        let a = arg.as_array().expect("Fn::Join args");
                        let items = self.eval(&a[1]);
                        let parts: Vec<&str> = items
                            .as_array()
                            .expect("Fn::Join list")
                            .iter()
                            .map(|i| i.as_str().expect("Fn::Join item"))
                            .collect();
                        Some(json!(parts.join(a[0].as_str().expect("literal delimiter"))))
                    }
                    "Fn::Split" => {
                        let a = arg.as_array().expect("Fn::Split args");
                        let s = self.eval(&a[1]);
                        let delim = a[0].as_str().expect("literal delimiter");
                        Some(json!(s.as_str().unwrap().split(delim).collect::<Vec<_>>()))
                    }
                    "Fn::Select" => {
                        let a = arg.as_array().expect("Fn::Select args");
                        let i: usize = scalar(&self.eval(&a[0])).parse().unwrap();
                        Some(self.eval(&a[1])[i].clone())
                    }
                    "Fn::GetAtt" => Some(json!(format!("<{}>", arg[0].as_str().unwrap()))),
                    f if f.starts_with("Fn::") => panic!("{f} is not rendered here"),
                    _ => Some(self.eval_map(m)),
                }
            }
            Value::Object(m) => Some(self.eval_map(m)),
            other => Some(other.clone()),
        }
    }

    fn eval(&self, v: &Value) -> Value {
        self.eval_opt(v)
            .unwrap_or_else(|| panic!("{v} has no value here"))
    }

    fn eval_map(&self, m: &Map<String, Value>) -> Value {
        Value::Object(
            m.iter()
                .filter_map(|(k, v)| self.eval_opt(v).map(|v| (k.clone(), v)))
                .collect(),
        )
    }

    fn reference(&self, name: &str) -> Option<Value> {
        Some(match name {
            "AWS::NoValue" => return None,
            "AWS::Region" => json!("eu-west-1"),
            "AWS::Partition" => json!("aws"),
            "AWS::AccountId" => json!("111122223333"),
            "AWS::StackName" => json!("mirrorslice"),
            _ => match self.params.get(name) {
                Some(v) => v.clone(),
                None => {
                    assert!(
                        self.template["Resources"].get(name).is_some(),
                        "unknown Ref {name}"
                    );
                    json!(format!("<{name}>"))
                }
            },
        })
    }

    /// `Fn::Sub`: a string, or a string and its variables.
    fn sub(&self, arg: &Value) -> String {
        let (text, vars) = match arg {
            Value::String(s) => (s.as_str(), Map::new()),
            Value::Array(a) => (
                a[0].as_str().expect("Fn::Sub string"),
                a[1].as_object().expect("Fn::Sub variables").clone(),
            ),
            other => panic!("Fn::Sub {other}"),
        };
        let mut out = String::new();
        let mut rest = text;
        while let Some(at) = rest.find("${") {
            out.push_str(&rest[..at]);
            let end = rest[at..].find('}').expect("unclosed ${") + at;
            let name = &rest[at + 2..end];
            if let Some(literal) = name.strip_prefix('!') {
                out.push_str(&format!("${{{literal}}}"));
            } else {
                let value = match vars.get(name) {
                    Some(v) => self.eval(v),
                    None if name.contains('.') => json!(format!("<{name}>")),
                    None => self.reference(name).expect("a value"),
                };
                out.push_str(
                    value
                        .as_str()
                        .unwrap_or_else(|| panic!("${{{name}}} is not a string: {value}")),
                );
            }
            rest = &rest[end + 1..];
        }
        out.push_str(rest);
        out
    }

    fn condition(&self, name: &str) -> bool {
        let c = self.template["Conditions"]
            .get(name)
            .unwrap_or_else(|| panic!("no condition {name}"));
        self.holds(c)
    }

    /// A condition or rule function.
    fn holds(&self, v: &Value) -> bool {
        let (k, arg) = v
            .as_object()
            .filter(|m| m.len() == 1)
            .and_then(|m| m.iter().next())
            .unwrap_or_else(|| panic!("not a condition: {v}"));
        let all = || arg.as_array().expect("condition list").iter();
        match k.as_str() {
            "Condition" => self.condition(arg.as_str().expect("condition name")),
            "Fn::Not" => !self.holds(&arg[0]),
            "Fn::And" => all().all(|c| self.holds(c)),
            "Fn::Or" => all().any(|c| self.holds(c)),
            // Compared as strings, as CloudFormation does (`"300"` equals a decoded `300`).
            "Fn::Equals" => match (self.eval(&arg[0]), self.eval(&arg[1])) {
                (a @ Value::Array(_), b) | (a, b @ Value::Array(_)) => a == b,
                (a, b) => scalar(&a) == scalar(&b),
            },
            other => panic!("{other} is not a condition function"),
        }
    }

    /// Whether rule `name` lets the stack be created: its assertions hold or it does not apply.
    fn rule_holds(&self, name: &str) -> bool {
        let rule = &self.template["Rules"][name];
        assert!(rule.is_object(), "no rule {name}");
        if let Some(c) = rule.get("RuleCondition") {
            if !self.holds(c) {
                return true;
            }
        }
        rule["Assertions"]
            .as_array()
            .expect("Assertions")
            .iter()
            .all(|a| self.holds(&a["Assert"]))
    }
}
