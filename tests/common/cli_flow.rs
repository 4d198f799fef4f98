//! One `mirrorslice run` flow `src->dst` driven through the CLI, as users run it: its own
//! cluster aliases (so its internal topics and leases are its own), `mm2.properties` and state
//! directory.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

/// One flow `src->dst` between the stack's clusters, with its own aliases and state.
pub struct Flow {
    pub source: String,
    pub target: String,
    pub config: PathBuf,
    pub state: tempfile::TempDir,
    _dir: tempfile::TempDir,
}

impl Flow {
    /// A flow whose topic filter matches only topics named with its own source alias: the
    /// brokers are shared with other tests and with earlier runs.
    pub fn new(_label: &str, extra: &str) -> Flow {
        let stack = super::stack();
        Flow::between(&stack.a, &stack.b, extra)
    }

    /// [`Flow::new`] between the clusters at `a` and `b` (e.g. a test's private broker).
    pub fn between(a: &str, b: &str, extra: &str) -> Flow {
        let source = super::unique("src").replace('-', "");
        let target = super::unique("dst").replace('-', "");
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("mm2.properties");
        let body = super::flow_properties_between(&source, a, &target, b, extra);
        std::fs::write(&config, body).unwrap();
        Flow {
            source,
            target,
            config,
            state: tempfile::tempdir().unwrap(),
            _dir: dir,
        }
    }

    pub fn name(&self) -> String {
        format!("{}->{}", self.source, self.target)
    }

    pub fn remote(&self, topic: &str) -> String {
        format!("{}.{topic}", self.source)
    }

    pub fn command(&self, max_duration: &str) -> Command {
        let mut cmd = Command::new(super::mirrorslice_bin());
        cmd.arg("run")
            .arg(&self.config)
            .args([
                "--flow",
                &self.name(),
                "--max-duration",
                max_duration,
                "--json",
            ])
            .envs(super::stack().env())
            .env("MIRRORSLICE_STATE_DIR", self.state.path())
            .env("MIRRORSLICE_LOG", "warn");
        cmd
    }

    /// Run one slice; returns (exit code, report JSON, stderr).
    pub fn run(&self) -> (i32, Value, String) {
        let out = self.command("60s").output().expect("run mirrorslice");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let report = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("report is not JSON ({e}): {stdout}\nstderr: {stderr}"));
        (out.status.code().unwrap_or(-1), report, stderr)
    }

    /// Appends `lines` to the flow's `mm2.properties`: the next slice reads them.
    pub fn add_config(&self, lines: &str) {
        let mut body = std::fs::read_to_string(&self.config).unwrap();
        body.push_str(lines);
        std::fs::write(&self.config, body).unwrap();
    }

    pub fn run_ok(&self) -> Value {
        let (code, report, stderr) = self.run();
        assert_eq!(code, 0, "slice failed: {stderr}\n{report:#}");
        assert_eq!(report["ok"], true, "{report:#}");
        report["slices"][0].clone()
    }
}
