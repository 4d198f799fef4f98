//! The `mirrorslice` command line. Thin: parse arguments, call the library, print, exit.
//!
//! Exit codes: 0 success; 1 the command ran but found problems (e.g. a connector config that
//! MM2 would reject); 2 the configuration or arguments are invalid.

use clap::{Args, Parser, Subcommand};
use mirrorslice::config::{MirrorMakerConfig, SourceAndTarget};
use mirrorslice::plan::{build_plan, render_text, PlanOptions};
use std::path::PathBuf;
use std::process::ExitCode;
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
