//! The `mirrorslice` command line. Thin: parse arguments, call the library, print, exit.
//!
//! Exit codes: 0 success; 1 the command ran but found problems (e.g. a connector config that
//! MM2 would reject); 2 the configuration or arguments are invalid.

use clap::{Args, Parser, Subcommand};
use mirrorslice::config::{MirrorMakerConfig, SourceAndTarget};
use mirrorslice::lease::local::LocalLeaseStore;
use mirrorslice::plan::{build_plan, render_text, select_pairs, PlanOptions};
use mirrorslice::slice::{run_slice, SliceEnv, SliceRequest};
use mirrorslice::state::{default_state_dir, LocalStateStore};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

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
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("MIRRORSLICE_LOG")
        .unwrap_or_else(|_| EnvFilter::new("warn,mirrorslice=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async move {
        match cli.command {
            Command::Plan(args) => plan(args).await,
            Command::Run(args) => run(args).await,
        }
    })
}

async fn plan(args: PlanArgs) -> ExitCode {
    let mm = match MirrorMakerConfig::load(&args.select.config) {
        Ok(mm) => mm,
        Err(e) => return config_error(&args.select.config, e),
    };
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
    let mm = match MirrorMakerConfig::load(&path) {
        Ok(mm) => Arc::new(mm),
        Err(e) => return config_error(&path, e),
    };
    let pairs = match select_pairs(&mm, &args.select.clusters, args.select.flow.as_ref()) {
        Ok(p) => p,
        Err(e) => return config_error(&path, e),
    };
    let state_dir = default_state_dir();
    let env = SliceEnv {
        state: Arc::new(LocalStateStore::new(&state_dir)),
        leases: Arc::new(LocalLeaseStore::new(&state_dir)),
        owner: mirrorslice::lease::owner_id(),
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

    let mut exit = ExitCode::SUCCESS;
    let mut reports = Vec::new();
    let mut errors = Vec::new();
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
