//! Whether Java MirrorMaker 2 is running the same flow right now.
//!
//! Java MM2's workers for pair `S->T` form the Connect group `group.id` (by default `S-mm2`,
//! mm2-compat §1.4) on cluster T, and share the flow's internal topics with us. A slice never
//! joins that group (it holds leases instead), so the two cannot see each other: both would
//! copy the same records and race on the same Connect offsets (duplicates, never loss, but
//! silent). A slice therefore asks T about the group before it does anything and stops, naming
//! the group and its members, while a Java worker is in it. The group's protocol type is
//! `connect`, which librdkafka's DescribeConsumerGroups refuses ("not a consumer group"), so
//! this uses its older group listing (DescribeGroups for one group, any protocol type).

use std::time::Duration;

use crate::config::Props;

/// What the target says about the flow's Connect worker group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JavaWorkers {
    /// Nobody is in the group (it is empty or does not exist).
    Absent,
    /// Java workers are in the group now.
    Running {
        group: String,
        members: usize,
        /// The broker's name for the group state (`Stable`, `PreparingRebalance`, ...).
        state: String,
    },
    /// The group could not be described (e.g. no Describe permission on it).
    Unknown { group: String, error: String },
}

impl JavaWorkers {
    /// Why a slice of the flow must not run, if Java workers are running it.
    pub fn refusal(&self, target: &str) -> Option<String> {
        match self {
            JavaWorkers::Running {
                group,
                members,
                state,
            } => Some(format!(
                "Java MirrorMaker 2 is running this flow: its Connect group {group:?} on \
                 cluster {target} has {members} member(s) ({}); stop it before mirrorslice \
                 takes over (running both copies records twice). A killed worker leaves the \
                 group when its session times out.",
                state
            )),
            JavaWorkers::Absent | JavaWorkers::Unknown { .. } => None,
        }
    }
}

/// Describes the Connect group of `worker` (the pair's worker config) with the target `admin`
/// client settings, bounded by `timeout`.
pub async fn java_workers(worker: &Props, admin: &Props, timeout: Duration) -> JavaWorkers {
    let group = match worker.get("group.id") {
        Some(g) => g.clone(),
        None => return JavaWorkers::Absent,
    };
    let unknown = |error: String| JavaWorkers::Unknown {
        group: group.clone(),
        error,
    };
    let client = match crate::kafka::shared_admin("worker group admin", admin) {
        Ok(c) => c,
        Err(e) => return unknown(e.to_string()),
    };
    let name = group.clone();
    let listed = tokio::task::spawn_blocking(move || {
        let list = client.inner().fetch_group_list(Some(&name), timeout)?;
        Ok::<_, rdkafka::error::KafkaError>(
            list.groups()
                .iter()
                .find(|g| g.name() == name)
                .map(|g| (g.state().to_string(), g.members().len())),
        )
    })
    .await;
    match listed {
        Ok(Ok(Some((state, members)))) => classify(&group, &state, members),
        Ok(Ok(None)) => JavaWorkers::Absent,
        Ok(Err(e)) => unknown(e.to_string()),
        Err(e) => unknown(e.to_string()),
    }
}

fn classify(group: &str, state: &str, members: usize) -> JavaWorkers {
    match state {
        "Empty" | "Dead" => JavaWorkers::Absent,
        _ if members == 0 => JavaWorkers::Absent,
        state => JavaWorkers::Running {
            group: group.to_string(),
            members,
            state: state.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_in_a_live_group_are_running_workers() {
        assert_eq!(
            classify("A-mm2", "Stable", 2),
            JavaWorkers::Running {
                group: "A-mm2".into(),
                members: 2,
                state: "Stable".into()
            }
        );
        assert!(matches!(
            classify("A-mm2", "PreparingRebalance", 1),
            JavaWorkers::Running { .. }
        ));
        for state in ["Empty", "Dead"] {
            assert_eq!(classify("A-mm2", state, 0), JavaWorkers::Absent);
        }
        // A group being torn down can still list a member it is about to drop.
        assert_eq!(classify("A-mm2", "Dead", 1), JavaWorkers::Absent);
        assert_eq!(classify("A-mm2", "Stable", 0), JavaWorkers::Absent);
    }

    #[test]
    fn the_refusal_names_group_cluster_and_members() {
        let running = classify("A-mm2", "Stable", 1);
        let msg = running.refusal("B").unwrap();
        assert!(
            msg.contains("\"A-mm2\" on cluster B has 1 member(s) (Stable)"),
            "{msg}"
        );
        assert_eq!(JavaWorkers::Absent.refusal("B"), None);
        let unknown = JavaWorkers::Unknown {
            group: "A-mm2".into(),
            error: "GROUP_AUTHORIZATION_FAILED".into(),
        };
        assert_eq!(unknown.refusal("B"), None);
    }
}
