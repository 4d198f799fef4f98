//! The `mirror` Lambda function (`bootstrap`): one bounded MirrorMaker 2 slice per invocation.
//!
//! Thin on purpose — every decision about replication lives in the `mirrorslice` library; this
//! binary only turns a Lambda invocation into a library call. The life of one invocation:
//!
//! 1. **Event.** EventBridge Scheduler delivers `{"flow": "A->B"}`, optionally with
//!    `"max_duration": "30s"` (caps the slice below the invocation's own deadline) and
//!    `"dry_run": true` (return the plan of that flow instead of running it).
//! 2. **Config.** `mm2.properties` is read from `MIRRORSLICE_CONFIG` (default: `mm2.properties`
//!    in `LAMBDA_TASK_ROOT`, i.e. next to this binary). It is re-read on *every* invocation:
//!    parsing a properties file takes well under a millisecond, and re-reading means a config
//!    on a mounted file system (EFS) takes effect without a cold start, and a broken file is
//!    reported per invocation as a `ConfigError` instead of a failed init.
//! 3. **Deadline.** Lambda kills the process at its timeout, so the slice gets the invocation
//!    deadline (`Context.deadline`) minus `MIRRORSLICE_DEADLINE_MARGIN` (default
//!    [`DEFAULT_DEADLINE_MARGIN`]). Inside that, the slice itself stops consuming
//!    `mirrorslice.commit.margin` earlier to flush, commit, write status and release leases;
//!    this margin only covers what happens *after* the slice returns (metrics line, posting
//!    the response) plus scheduling jitter.
//! 4. **Slice.** Leases and state live in the DynamoDB table named by
//!    `MIRRORSLICE_LEASE_TABLE` (see `mirrorslice::backend`). The store — and with it the AWS
//!    SDK client and its connection pool — is built once per container, on first use, and
//!    borrowed by every later invocation (the `basic-shared-resource` pattern). A task whose
//!    lease another invocation holds is reported `held_elsewhere`: a successful no-op.
//! 5. **Report.** One CloudWatch EMF line goes to stdout (`println!`, never through `tracing`);
//!    JSON logs go to stderr; the slice report is the response. A slice that ran but failed
//!    (a gap, a task error) is a function error `SliceFailed`, so it counts in the function's
//!    `Errors` metric and alarms fire; its full report is still logged.
//!
//! `run_slice` joins every task it starts and releases its leases before returning, so nothing
//! of the slice runs between invocations (Lambda freezes the process then). Only idle
//! connection-pool tasks of the HTTP clients remain; the invocation log line records the
//! runtime's live task count so a leak would show.

use lambda_runtime::{service_fn, Diagnostic, LambdaEvent};
use mirrorslice::backend::{lease_backend, slice_env_for, BackendError, LeaseBackend};
use mirrorslice::config::{ConfigError, MirrorMakerConfig, SourceAndTarget};
use mirrorslice::plan::{build_plan, select_pairs, PlanOptions};
use mirrorslice::slice::{run_slice, SliceEnv, SliceRequest};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// Environment variable naming the `mm2.properties` file.
const CONFIG_ENV: &str = "MIRRORSLICE_CONFIG";
/// Environment variable overriding [`DEFAULT_DEADLINE_MARGIN`] (a duration: `500ms`, `1s`).
const MARGIN_ENV: &str = "MIRRORSLICE_DEADLINE_MARGIN";

/// Time kept between the end of the slice and Lambda's hard deadline. Measured on the local
/// stack (functions/mirror/tests/runtime_api.rs: a slice cut by an 8 s deadline while its
/// producer had a backlog): printing the metrics line and posting the response take 1–3 ms
/// after the slice returns. The slice itself has ended 0.9 s *before* its deadline with the
/// current wrap-up, but 150–610 ms *after* it with an earlier one (final flush, commit, status
/// and lease release outlasting `mirrorslice.commit.margin`). 2 s covers three times that worst
/// overrun and costs under 1 % of a 5-minute slice.
const DEFAULT_DEADLINE_MARGIN: Duration = Duration::from_secs(2);

/// The invocation payload.
#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct MirrorEvent {
    /// The herder pair, `source->target`.
    flow: String,
    /// Caps the slice (humantime: `30s`, `5m`); overrides `mirrorslice.slice.max.duration`.
    #[serde(default)]
    max_duration: Option<String>,
    /// Return the plan of the flow instead of running it.
    #[serde(default)]
    dry_run: bool,
}

/// Why an invocation failed; `error_type` in Lambda's error response is the variant's name.
#[derive(Debug, thiserror::Error)]
enum FunctionError {
    /// The event is not `{"flow": "S->T", ...}`.
    #[error("invalid event: {0}")]
    InvalidEvent(String),
    /// `mm2.properties` cannot be read or is invalid, or an environment setting is.
    #[error("{0}")]
    Config(String),
    /// The flow is not a herder pair of the configuration.
    #[error("{0}")]
    UnknownFlow(String),
    /// The lease table cannot be reached or configured.
    #[error("lease backend: {0}")]
    Backend(String),
    /// The slice could not start (cluster unreachable) or ran and failed (gap, task error).
    #[error("{0}")]
    SliceFailed(String),
}

impl FunctionError {
    fn error_type(&self) -> &'static str {
        match self {
            FunctionError::InvalidEvent(_) => "InvalidEvent",
            FunctionError::Config(_) => "ConfigError",
            FunctionError::UnknownFlow(_) => "UnknownFlow",
            FunctionError::Backend(_) => "BackendError",
            FunctionError::SliceFailed(_) => "SliceFailed",
        }
    }

    /// A configuration error, naming the file unless the message already does.
    fn config(path: &Path, e: ConfigError) -> Self {
        match e {
            ConfigError::UnknownFlow(m) => FunctionError::UnknownFlow(m),
            e => {
                let (message, file) = (e.to_string(), path.display().to_string());
                FunctionError::Config(if message.contains(&file) {
                    message
                } else {
                    format!("{file}: {message}")
                })
            }
        }
    }
}

impl From<FunctionError> for Diagnostic {
    fn from(e: FunctionError) -> Diagnostic {
        Diagnostic {
            error_type: e.error_type().into(),
            error_message: e.to_string(),
        }
    }
}

/// What lives for the whole container: settings from the environment and the lease store.
struct Function {
    config_path: PathBuf,
    /// Built on first use, then reused; rebuilt only if the configured table changes.
    env: tokio::sync::Mutex<Option<(LeaseBackend, SliceEnv)>>,
}

/// `MIRRORSLICE_CONFIG`, else `mm2.properties` in `LAMBDA_TASK_ROOT`, else next to the binary.
fn config_path() -> PathBuf {
    if let Some(p) = std::env::var_os(CONFIG_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let root = std::env::var_os("LAMBDA_TASK_ROOT")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::current_exe()
                .ok()
                .and_then(|exe| exe.parent().map(Path::to_path_buf))
        })
        .unwrap_or_default();
    root.join("mm2.properties")
}

fn deadline_margin() -> Result<Duration, FunctionError> {
    match std::env::var(MARGIN_ENV) {
        Err(_) => Ok(DEFAULT_DEADLINE_MARGIN),
        Ok(v) if v.trim().is_empty() => Ok(DEFAULT_DEADLINE_MARGIN),
        Ok(v) => humantime::parse_duration(v.trim()).map_err(|e| {
            FunctionError::Config(format!(
                "{MARGIN_ENV}={v}: expected a duration like 500ms or 2s: {e}"
            ))
        }),
    }
}

/// Time the slice may use: from `now` until `deadline` (the invocation's) less `margin`;
/// zero when the invocation is already that close to its end.
fn slice_budget(deadline: SystemTime, now: SystemTime, margin: Duration) -> Duration {
    deadline
        .duration_since(now)
        .unwrap_or(Duration::ZERO)
        .saturating_sub(margin)
}

fn parse_event(
    payload: Value,
) -> Result<(MirrorEvent, SourceAndTarget, Option<Duration>), FunctionError> {
    let event: MirrorEvent = serde_json::from_value(payload).map_err(|e| {
        FunctionError::InvalidEvent(format!(
            "{e}; expected {{\"flow\": \"SOURCE->TARGET\"}} with optional \"max_duration\" and \"dry_run\""
        ))
    })?;
    let flow: SourceAndTarget = event
        .flow
        .parse()
        .map_err(|e: ConfigError| FunctionError::InvalidEvent(e.to_string()))?;
    let max_duration = match &event.max_duration {
        None => None,
        Some(d) => Some(humantime::parse_duration(d.trim()).map_err(|e| {
            FunctionError::InvalidEvent(format!(
                "max_duration {d:?}: expected a duration like 30s or 5m: {e}"
            ))
        })?),
    };
    Ok((event, flow, max_duration))
}

impl Function {
    /// The [`SliceEnv`] for this config: the cached one when the backend is unchanged.
    async fn slice_env(&self, mm: &MirrorMakerConfig) -> Result<SliceEnv, FunctionError> {
        let backend = lease_backend(mm).map_err(|e| FunctionError::config(&self.config_path, e))?;
        let mut cached = self.env.lock().await;
        if let Some((b, env)) = cached.as_ref() {
            if *b == backend {
                return Ok(env.clone());
            }
        }
        let env = slice_env_for(&backend).await.map_err(|e| match e {
            BackendError::Config(e) => FunctionError::config(&self.config_path, e),
            BackendError::Lease(e) => FunctionError::Backend(e.to_string()),
        })?;
        if let LeaseBackend::Local { state_dir } = &backend {
            // Each container has its own /tmp: local leases protect nothing across invocations
            // on other containers. Fine for a test, wrong for a schedule.
            tracing::warn!(state_dir = %state_dir.display(),
                "no lease table configured (MIRRORSLICE_LEASE_TABLE): using local leases");
        }
        *cached = Some((backend, env.clone()));
        Ok(env)
    }

    async fn handle(&self, event: LambdaEvent<Value>) -> Result<Value, FunctionError> {
        let received = Instant::now();
        let (payload, context) = event.into_parts();
        let (event, flow, max_duration) = parse_event(payload)?;
        let budget = slice_budget(context.deadline(), SystemTime::now(), deadline_margin()?);
        let deadline = received + budget;

        let mm = MirrorMakerConfig::load_fetching_secrets(&self.config_path)
            .await
            .map_err(|e| FunctionError::config(&self.config_path, e))?;
        select_pairs(&mm, &[], Some(&flow))
            .map_err(|e| FunctionError::config(&self.config_path, e))?;
        let config_ms = received.elapsed().as_secs_f64() * 1000.0;

        if event.dry_run {
            let opts = PlanOptions {
                flow: Some(flow),
                timeout: budget.clamp(Duration::from_millis(100), Duration::from_secs(10)),
                ..Default::default()
            };
            let plan = build_plan(&mm, &opts).await.map_err(|e| match e {
                mirrorslice::plan::PlanError::Config(e) => {
                    FunctionError::config(&self.config_path, e)
                }
            })?;
            return Ok(serde_json::to_value(&plan).expect("plan serializes"));
        }

        let env = self.slice_env(&mm).await?;
        let request = SliceRequest {
            max_duration,
            deadline: Some(deadline),
        };
        tracing::info!(flow = %flow, budget_ms = budget.as_millis() as u64, config_ms, "slice starting");
        let ran = run_slice(&mm, &flow, &env, &request).await;
        // Nothing of the slice may be delivered after the handler returns.
        let dropped = mirrorslice::slice::settle(deadline).await;
        let mut report = ran.map_err(|e| FunctionError::SliceFailed(e.to_string()))?;
        if let Some(error) = dropped {
            report.ok = false;
            report.caught_up = false;
            report.errors.push(error);
        }

        // Straight to stdout: CloudWatch must see the EMF directive at the top level.
        println!(
            "{}",
            mirrorslice::metrics::emf_line(&report, chrono::Utc::now().timestamp_millis())
        );
        let alive_tasks = tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks();
        let left_ms = deadline
            .saturating_duration_since(Instant::now())
            .as_millis() as u64;
        tracing::info!(
            flow = %flow,
            records = report.records,
            caught_up = report.caught_up,
            deadline_margin_ms = report.deadline_margin_ms,
            left_before_slice_deadline_ms = left_ms,
            alive_tasks,
            "{}",
            report.one_line()
        );
        let value = serde_json::to_value(&report).expect("report serializes");
        if !report.ok {
            tracing::error!(report = %value, "slice failed");
            return Err(FunctionError::SliceFailed(format!(
                "{flow}: {}",
                report.errors.join("; ")
            )));
        }
        Ok(value)
    }
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    // MIRRORSLICE_LOG (a full filter) wins; else the level Lambda's log configuration passes.
    let filter = EnvFilter::try_from_env("MIRRORSLICE_LOG").unwrap_or_else(|_| {
        let level = std::env::var("AWS_LAMBDA_LOG_LEVEL")
            .map(|l| l.to_ascii_lowercase())
            .ok()
            .filter(|l| ["trace", "debug", "info", "warn", "error"].contains(&l.as_str()))
            .unwrap_or_else(|| "info".into());
        EnvFilter::new(format!("warn,mirrorslice={level},mirror={level}"))
    });
    let _ = tracing_subscriber::fmt()
        .json()
        .with_ansi(false)
        // The current span carries the invocation's requestId (set by lambda_runtime).
        .with_current_span(true)
        .with_span_list(false)
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn main() -> Result<(), lambda_runtime::Error> {
    // Before the runtime's threads exist (see mirrorslice::memory).
    mirrorslice::memory::tune_malloc();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(serve())
}

async fn serve() -> Result<(), lambda_runtime::Error> {
    init_logging();
    let function = Function {
        config_path: config_path(),
        env: tokio::sync::Mutex::new(None),
    };
    let function = &function;
    lambda_runtime::run(service_fn(move |event| async move {
        function.handle(event).await
    }))
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn event_with_overrides() {
        let (event, flow, max) =
            parse_event(json!({"flow": "A->B", "max_duration": "30s", "dry_run": true})).unwrap();
        assert_eq!(flow, SourceAndTarget::new("A", "B"));
        assert_eq!(max, Some(Duration::from_secs(30)));
        assert!(event.dry_run);
        let (event, _, max) = parse_event(json!({"flow": "B->A"})).unwrap();
        assert_eq!((event.dry_run, max), (false, None));
    }

    #[test]
    fn bad_events_are_invalid_event_errors() {
        for payload in [
            json!({}),
            json!({"flow": "A-B"}),
            json!({"flow": "A->B", "max_duration": "soon"}),
            json!({"flow": "A->B", "dryrun": true}),
            json!("A->B"),
        ] {
            let err = parse_event(payload.clone()).unwrap_err();
            assert_eq!(err.error_type(), "InvalidEvent", "{payload}: {err}");
        }
    }

    #[test]
    fn errors_map_to_diagnostics_with_their_type() {
        let d: Diagnostic = FunctionError::config(
            Path::new("/var/task/mm2.properties"),
            ConfigError::UnknownFlow("flow X->Y is not a herder pair".into()),
        )
        .into();
        assert_eq!(d.error_type, "UnknownFlow");
        assert!(d.error_message.contains("X->Y"));
        let d: Diagnostic = FunctionError::config(
            Path::new("/var/task/mm2.properties"),
            ConfigError::Missing {
                key: "clusters".into(),
            },
        )
        .into();
        assert_eq!(d.error_type, "ConfigError");
        assert!(
            d.error_message.contains("/var/task/mm2.properties"),
            "{}",
            d.error_message
        );
        let d: Diagnostic = FunctionError::SliceFailed("boom".into()).into();
        assert_eq!(
            (d.error_type.as_str(), d.error_message.as_str()),
            ("SliceFailed", "boom")
        );
    }

    #[test]
    fn budget_is_the_invocation_deadline_less_the_margin() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let margin = Duration::from_millis(1500);
        assert_eq!(
            slice_budget(now + Duration::from_secs(60), now, margin),
            Duration::from_millis(58_500)
        );
        // Closer than the margin, or already past: nothing left.
        assert_eq!(
            slice_budget(now + Duration::from_secs(1), now, margin),
            Duration::ZERO
        );
        assert_eq!(
            slice_budget(now - Duration::from_secs(1), now, margin),
            Duration::ZERO
        );
    }
}
