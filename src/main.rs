//! The `mirrorslice` command line. Thin: parse arguments, call the library, print, exit.
//!
//! Exit codes: 0 success; 1 the command ran but found problems (e.g. a connector config that
//! MM2 would reject); 2 the configuration or arguments are invalid.

use clap::{Args, Parser, Subcommand};
use mirrorslice::config::{MirrorMakerConfig, SourceAndTarget};
use mirrorslice::plan::{build_plan, render_text, select_pairs, PlanOptions};
use mirrorslice::slice::{run_slice, SliceRequest};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long `run` waits, after its slices, for their last status, heartbeat and checkpoint
/// records before exiting (each slice already waited within its own deadline).
const SETTLE_GRACE: Duration = Duration::from_secs(1);

#[derive(Parser)]
#[command(
    name = "mirrorslice",
    version,
    about = "Kafka MirrorMaker 2 as a bounded-time batch job"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show the herder pairs, connectors, effective settings and topics a config would replicate.
    Plan(PlanArgs),
    /// Run one bounded slice of each selected herder pair, then exit.
    Run(RunArgs),
    /// Show a consumer group's offsets on the target, translated through the flow's
    /// checkpoints (`RemoteClusterUtils.translateOffsets`).
    TranslateOffsets(GroupFlowArgs),
    /// Move a consumer group to the target: show the translated offsets next to the group's
    /// current ones there, and with `--apply` commit them.
    Failover(FailoverArgs),
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    select: FlowSelection,
    /// Longest the slice may run (e.g. `30s`, `5m`); default from
    /// `mirrorslice.slice.max.duration` (5m). The slice ends earlier once caught up.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    max_duration: Option<Duration>,
    /// Print the slice reports as one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

/// Pair selection shared by every command that works on flows.
#[derive(Args)]
struct FlowSelection {
    /// The MirrorMaker 2 properties file (`mm2.properties`).
    config: PathBuf,
    /// Target clusters this node serves, as in `connect-mirror-maker.sh --clusters`.
    #[arg(long, num_args = 1.., value_name = "ALIAS")]
    clusters: Vec<String>,
    /// Only this herder pair, written `SOURCE->TARGET`.
    #[arg(long, value_name = "S->T")]
    flow: Option<SourceAndTarget>,
}

#[derive(Args)]
struct PlanArgs {
    #[command(flatten)]
    select: FlowSelection,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Do not contact the clusters; plan from the file alone.
    #[arg(long)]
    offline: bool,
    /// Bound for each cluster query (e.g. `5s`).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    timeout: Duration,
    /// Print one `ScheduleV2` event per herder pair, to paste under the function's `Events:`
    /// in template.yaml (offline).
    #[arg(long)]
    sam_events: bool,
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let mut filter = EnvFilter::try_from_env("MIRRORSLICE_LOG")
        .unwrap_or_else(|_| EnvFilter::new("warn,mirrorslice=info"));
    for directive in mirrorslice::kafka::LOG_DIRECTIVES {
        filter = filter.add_directive(directive.parse().expect("valid directive"));
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn main() {
    mirrorslice::memory::tune_malloc();
    let cli = Cli::parse();
    init_logging();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let code = runtime.block_on(async move {
        match cli.command {
            Command::Plan(args) => plan(args).await,
            Command::Run(args) => run(args).await,
            Command::TranslateOffsets(args) => translate_offsets(args).await,
            Command::Failover(args) => failover(args).await,
        }
    });
    // The command's outcome is final here. Blocking calls it abandoned on the way out (the
    // Java-worker check or a probe, still waiting on a cluster that refused us) must not hold
    // the exit for their own timeouts, as dropping the runtime would.
    runtime.shutdown_background();
    exit_now(code)
}

/// Ends the process without libc's `exit` handlers. Threads may still hold librdkafka clients
/// (the calls abandoned above; report threads destroying their producers, see
/// `kafka/report_thread.rs`), and OpenSSL's cleanup among those handlers raced their teardown
/// of TLS clients: a `double free` after a slice's complete report, turning its exit status
/// into a signal. Everything the command owed is written and flushed by now.
fn exit_now(code: ExitCode) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // The commands end with 0, 1 or 2; `ExitCode` does not say which but compares.
    let status = (0..=2u8).find(|c| ExitCode::from(*c) == code).unwrap_or(1);
    // SAFETY: `_exit` only ends the process; nothing runs after it.
    unsafe { libc::_exit(i32::from(status)) }
}

async fn plan(args: PlanArgs) -> ExitCode {
    // Offline (and for the SAM events) nothing is asked of AWS: secrets stay placeholders.
    let loaded = if args.offline || args.sam_events {
        MirrorMakerConfig::load(&args.select.config)
    } else {
        MirrorMakerConfig::load_fetching_secrets(&args.select.config).await
    };
    let mm = match loaded {
        Ok(mm) => mm,
        Err(e) => return config_error(&args.select.config, e),
    };
    if args.sam_events {
        return match select_pairs(&mm, &args.select.clusters, args.select.flow.as_ref()) {
            Ok(pairs) => {
                print!("{}", sam_schedule_events(&pairs));
                ExitCode::SUCCESS
            }
            Err(e) => config_error(&args.select.config, e),
        };
    }
    let opts = PlanOptions {
        targets: args.select.clusters,
        flow: args.select.flow,
        offline: args.offline,
        timeout: args.timeout,
    };
    let plan = match build_plan(&mm, &opts).await {
        Ok(p) => p,
        Err(e) => return config_error(&args.select.config, e),
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&plan).expect("plan serializes")
        );
    } else {
        print!("{}", render_text(&plan));
    }
    if plan.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

async fn run(args: RunArgs) -> ExitCode {
    let path = args.select.config.clone();
    let mm = match MirrorMakerConfig::load_fetching_secrets(&path).await {
        Ok(mm) => Arc::new(mm),
        Err(e) => return config_error(&path, e),
    };
    let pairs = match select_pairs(&mm, &args.select.clusters, args.select.flow.as_ref()) {
        Ok(p) => p,
        Err(e) => return config_error(&path, e),
    };
    // DynamoDB leases when MIRRORSLICE_LEASE_TABLE / mirrorslice.lease.table names a table,
    // otherwise file locks under the state directory.
    let env = match mirrorslice::backend::slice_env(&mm).await {
        Ok(env) => env,
        Err(mirrorslice::backend::BackendError::Config(e)) => return config_error(&path, e),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let request = SliceRequest {
        max_duration: args.max_duration,
        deadline: None,
    };

    // Pairs are independent: run their slices side by side.
    let mut slices = tokio::task::JoinSet::new();
    for (index, pair) in pairs.into_iter().enumerate() {
        let (mm, env, request) = (mm.clone(), env.clone(), request.clone());
        slices.spawn(async move {
            (
                index,
                pair.clone(),
                run_slice(&mm, &pair, &env, &request).await,
            )
        });
    }
    let mut results = Vec::new();
    while let Some(joined) = slices.join_next().await {
        results.push(joined.expect("slice task panicked"));
    }
    results.sort_by_key(|(i, _, _)| *i);
    // Status, heartbeat and checkpoint records still queued go out before the process exits.
    let dropped = mirrorslice::slice::settle(Instant::now() + SETTLE_GRACE).await;

    let mut exit = ExitCode::SUCCESS;
    let mut reports = Vec::new();
    let mut errors = Vec::new();
    if let Some(dropped) = &dropped {
        eprintln!("error: {dropped}");
        exit = ExitCode::from(1);
        errors.push(serde_json::json!({ "error": dropped }));
    }
    for (_, pair, result) in results {
        match result {
            Ok(report) => {
                if !report.ok {
                    exit = ExitCode::from(1);
                    for e in &report.errors {
                        eprintln!("error: {pair}: {e}");
                    }
                }
                for gap in &report.gaps {
                    eprintln!(
                        "{}: {pair}: {}",
                        if gap.skipped {
                            "warning: skipped gap"
                        } else {
                            "error: gap"
                        },
                        gap.describe()
                    );
                }
                if !args.json {
                    println!("{}", report.one_line());
                }
                reports.push(report);
            }
            Err(e) => {
                eprintln!("error: {e}");
                if matches!(e, mirrorslice::slice::SliceError::Config(_)) {
                    exit = ExitCode::from(2);
                } else if exit == ExitCode::SUCCESS {
                    exit = ExitCode::from(1);
                }
                errors.push(serde_json::json!({"flow": pair.to_string(), "error": e.to_string()}));
            }
        }
    }
    if args.json {
        let ok = errors.is_empty() && reports.iter().all(|r| r.ok);
        let out = serde_json::json!({ "ok": ok, "slices": reports, "errors": errors });
        println!(
            "{}",
            serde_json::to_string_pretty(&out).expect("report serializes")
        );
    }
    exit
}

/// SAM `ScheduleV2` events, one per herder pair, indented for a function's `Events:` map.
/// Event names are the aliases' letters and digits (`A->B` → `FlowAToB`), numbered on clash.
fn sam_schedule_events(pairs: &[SourceAndTarget]) -> String {
    let id =
        |alias: &str| -> String { alias.chars().filter(char::is_ascii_alphanumeric).collect() };
    let mut seen = std::collections::BTreeSet::new();
    let mut out = String::from("      Events:\n");
    for pair in pairs {
        let base = format!("Flow{}To{}", id(&pair.source), id(&pair.target));
        let mut name = base.clone();
        let mut n = 2;
        while !seen.insert(name.clone()) {
            name = format!("{base}{n}");
            n += 1;
        }
        // JSON inside a single-quoted YAML scalar: only `'` needs doubling there.
        let input = serde_json::json!({ "flow": pair.to_string() })
            .to_string()
            .replace('\'', "''");
        out.push_str(&format!(
            "        {name}:\n          Type: ScheduleV2\n          Properties:\n            \
             ScheduleExpression: !Ref ScheduleRate\n            Input: '{input}'\n"
        ));
    }
    out
}

/// Arguments of `translate-offsets`, shared by `failover`.
#[derive(Args)]
struct GroupFlowArgs {
    /// The MirrorMaker 2 properties file (`mm2.properties`).
    config: PathBuf,
    /// The herder pair whose checkpoints to read, written `SOURCE->TARGET`; the group's offsets
    /// are translated into (and committed on) TARGET.
    #[arg(long, value_name = "S->T")]
    flow: SourceAndTarget,
    /// The consumer group, as named on the source cluster (MM2 keeps the name).
    #[arg(long, value_name = "GROUP")]
    group: String,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Bound for reading the checkpoints topic to its end, and for each admin request.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    timeout: Duration,
}

#[derive(Args)]
struct FailoverArgs {
    #[command(flatten)]
    group: GroupFlowArgs,
    /// Commit the translated offsets to the group on the target. Refused while the group has
    /// active members there.
    #[arg(long)]
    apply: bool,
    /// Also move partitions where the target group is already ahead of the translated offset
    /// back to it (by default those are left ahead, with a warning).
    #[arg(long)]
    allow_rewind: bool,
}

async fn translate_offsets(args: GroupFlowArgs) -> ExitCode {
    use mirrorslice::failover::{read_translation, render_translation};
    let mm = match MirrorMakerConfig::load_fetching_secrets(&args.config).await {
        Ok(mm) => mm,
        Err(e) => return config_error(&args.config, e),
    };
    let t = match read_translation(&mm, &args.flow, &args.group, args.timeout).await {
        Ok(t) => t,
        Err(e) => return failover_error(&args.config, e),
    };
    if args.json {
        println!(
            "{}",
            mirrorslice::failover::render_translation_json(&t.offsets)
        );
    } else {
        print!("{}", render_translation(&args.flow, &args.group, &t));
    }
    ExitCode::SUCCESS
}

async fn failover(args: FailoverArgs) -> ExitCode {
    use mirrorslice::failover::{failover, render_plan, FailoverOptions};
    let g = &args.group;
    let mm = match MirrorMakerConfig::load_fetching_secrets(&g.config).await {
        Ok(mm) => mm,
        Err(e) => return config_error(&g.config, e),
    };
    let opts = FailoverOptions {
        apply: args.apply,
        allow_rewind: args.allow_rewind,
        timeout: g.timeout,
    };
    let plan = match failover(&mm, &g.flow, &g.group, &opts).await {
        Ok(p) => p,
        Err(e) => return failover_error(&g.config, e),
    };
    if g.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&plan).expect("plan serializes")
        );
    } else {
        print!("{}", render_plan(&plan));
    }
    ExitCode::SUCCESS
}

/// Exit 2 for configuration problems (file, flow, client settings), 1 for everything else.
fn failover_error(path: &std::path::Path, e: mirrorslice::failover::FailoverError) -> ExitCode {
    if e.is_config() {
        config_error(path, e)
    } else {
        eprintln!("error: {e}");
        ExitCode::from(1)
    }
}

/// Print a configuration error; name the file unless the message already does.
fn config_error(path: &std::path::Path, e: impl std::fmt::Display) -> ExitCode {
    let message = e.to_string();
    let file = path.display().to_string();
    if message.contains(&file) {
        eprintln!("error: {message}");
    } else {
        eprintln!("error: {file}: {message}");
    }
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sam_events_one_schedule_per_pair_with_the_flow_as_input() {
        let pairs: Vec<SourceAndTarget> = ["A->B", "B->A", "us-east->eu.west", "useast->euwest"]
            .iter()
            .map(|p| p.parse().unwrap())
            .collect();
        let yaml = sam_schedule_events(&pairs);
        assert!(yaml.starts_with("      Events:\n"), "{yaml}");
        for (name, input) in [
            ("FlowAToB:", r#"Input: '{"flow":"A->B"}'"#),
            ("FlowBToA:", r#"Input: '{"flow":"B->A"}'"#),
            (
                "FlowuseastToeuwest:",
                r#"Input: '{"flow":"us-east->eu.west"}'"#,
            ),
            (
                "FlowuseastToeuwest2:",
                r#"Input: '{"flow":"useast->euwest"}'"#,
            ),
        ] {
            assert!(
                yaml.contains(&format!("        {name}\n")),
                "{name}: {yaml}"
            );
            assert!(yaml.contains(input), "{input}: {yaml}");
        }
        assert_eq!(yaml.matches("Type: ScheduleV2").count(), 4);
    }
}
