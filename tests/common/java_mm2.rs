//! Java MirrorMaker 2 and its client library, the real ones from Apache Kafka's jars
//! (`stack.sh mm2-exec` and `java-exec`), for the interop tests.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::faults::signal;
use super::stack_script;

/// How long a JVM may take to stop after SIGTERM (Connect stops its tasks and commits their
/// offsets first; about 2 s here).
const STOP_LIMIT: Duration = Duration::from_secs(60);

/// A Java MirrorMaker 2 node in dedicated mode, serving the flows into one target cluster.
/// Killed (SIGKILL) on drop if the test did not stop it.
pub struct JavaMirrorMaker {
    child: Option<Child>,
    log: PathBuf,
}

impl JavaMirrorMaker {
    /// Starts `MirrorMaker <config> --clusters <target>`, its output in `log`.
    pub fn start(config: &Path, target: &str, log: PathBuf) -> JavaMirrorMaker {
        let out = File::create(&log).expect("create the MirrorMaker log");
        let child = Command::new(stack_script())
            .arg("mm2-exec")
            .arg(config)
            .args(["--clusters", target])
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("start Java MirrorMaker (stack.sh mm2-exec)");
        JavaMirrorMaker {
            child: Some(child),
            log,
        }
    }

    /// Stops it as an operator would (SIGTERM: Connect stops the tasks and commits their
    /// offsets) and waits for the JVM to exit; how long that took.
    pub fn stop(&mut self) -> Duration {
        let started = Instant::now();
        let mut child = self.child.take().expect("Java MirrorMaker already stopped");
        signal(child.id(), Signal::SIGTERM);
        wait_bounded(&mut child, STOP_LIMIT, &self.log);
        started.elapsed()
    }

    /// Kills it with nothing flushed or committed (SIGKILL), as a crash or an OOM kill would.
    pub fn kill(&mut self) {
        let mut child = self.child.take().expect("Java MirrorMaker already stopped");
        signal(child.id(), Signal::SIGKILL);
        wait_bounded(&mut child, STOP_LIMIT, &self.log);
    }

    /// Everything it logged so far (warnings and errors, and the driver's start and stop).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Its ERROR lines, with the lines that follow them (the stack trace).
    pub fn errors(&self) -> Vec<String> {
        let log = self.log();
        let mut errors: Vec<String> = Vec::new();
        for line in log.lines() {
            if line.starts_with('[') {
                if line.contains("] ERROR ") {
                    errors.push(line.to_string());
                }
            } else if let Some(last) = errors.last_mut() {
                last.push('\n');
                last.push_str(line);
            }
        }
        errors
    }

    /// Panics (showing the log) unless it is still running.
    pub fn assert_running(&mut self) {
        let child = self.child.as_mut().expect("Java MirrorMaker was stopped");
        if let Some(status) = child.try_wait().unwrap() {
            panic!("Java MirrorMaker exited ({status}):\n{}", self.log());
        }
    }
}

impl Drop for JavaMirrorMaker {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn wait_bounded(child: &mut Child, limit: Duration, log: &Path) {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "Java MirrorMaker did not exit within {limit:?}:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `tests/java/Mm2Client.java` (Java's `RemoteClusterUtils`) with `args`; its stdout.
fn mm2_client(args: &[&str]) -> String {
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/Mm2Client.java");
    let out = Command::new(stack_script())
        .arg("java-exec")
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run Mm2Client.java (stack.sh java-exec)");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "Mm2Client {args:?}: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `RemoteClusterUtils.translateOffsets(B, source_alias, group)`: offset per (topic, partition).
pub fn java_translate_offsets(
    bootstrap: &str,
    source_alias: &str,
    group: &str,
) -> BTreeMap<(String, i32), i64> {
    mm2_client(&["translate", bootstrap, source_alias, group])
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 3, "Mm2Client translate line: {line:?}");
            (
                (f[0].to_string(), f[1].parse().unwrap()),
                f[2].parse().unwrap(),
            )
        })
        .collect()
}

/// What `RemoteClusterUtils`' topology helpers answer for a cluster.
#[derive(Debug)]
pub struct JavaTopology {
    /// `replicationHops` to the alias asked about; -1 when it is not upstream.
    pub hops: i32,
    pub upstream_clusters: Vec<String>,
    pub heartbeat_topics: Vec<String>,
    pub checkpoint_topics: Vec<String>,
}

/// `RemoteClusterUtils`' topology helpers on the cluster at `bootstrap`, hops to `alias`.
pub fn java_topology(bootstrap: &str, alias: &str) -> JavaTopology {
    let out = mm2_client(&["topology", bootstrap, alias]);
    let field = |name: &str| -> Vec<String> {
        let line = out
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}\t")))
            .unwrap_or_else(|| panic!("no {name} in Mm2Client topology output:\n{out}"));
        line.split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    JavaTopology {
        hops: field("hops")[0].parse().unwrap(),
        upstream_clusters: field("upstream"),
        heartbeat_topics: field("heartbeat-topics"),
        checkpoint_topics: field("checkpoint-topics"),
    }
}
