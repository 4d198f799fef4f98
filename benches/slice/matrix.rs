//! **4. Throughput matrix** (`MIRRORSLICE_BENCH_ONLY=matrix`, issue #14): `mirrorslice run`
//! against the bare pipe over record sizes, partition counts, compressed source topics and
//! `tasks.max`. Each case seeds its own source topic, then runs the pipe and every `tasks.max`
//! of the case in turn, `MIRRORSLICE_BENCH_TP_REPS` times (so drift hits all alike); figures are
//! medians, ratios against the pipe's median in the same case.
//!
//! Cases (`MIRRORSLICE_BENCH_RECORDS` 512 B records' worth of bytes each, 1M by default: equal
//! bytes whatever the record size; `MIRRORSLICE_BENCH_CASES` picks some by label, separated by
//! `;`):
//! * 512 B over 8 partitions: `tasks.max` 1, 2 and 8;
//! * 512 B over 64 partitions, 100 B and 10 KiB over 8, and 512 B in lz4- and in
//!   zstd-compressed source batches: `tasks.max` 1 and 8.
//!
//! Reported per run kind: MB/s and records/s (the tool's own timer), the ratio to the pipe,
//! the highest peak RSS, CPU seconds per GB copied, its ratio to the pipe's (the median of
//! each run's ratio to the pipe run of its repetition, and their range); and a verdict against
//! #14's goals for 512 B (≥ 1.0× the pipe, RSS ≤ 48 MiB with one task and ≤ 64 MiB with eight,
//! CPU per GB at most the pipe's).

use super::{
    create_topic, delete_topics, load, median, produce, run_plan, unique, verdict, BenchResult,
    Runner, Settings, SettingsSet, ThroughputRow,
};
use std::time::Instant;

struct Case {
    label: &'static str,
    partitions: i32,
    size: usize,
    compression: &'static str,
    tasks: &'static [u32],
}

const CASES: &[Case] = &[
    Case {
        label: "512 B, 8 partitions",
        partitions: 8,
        size: 512,
        compression: "none",
        tasks: &[1, 2, 8],
    },
    Case {
        label: "512 B, 64 partitions",
        partitions: 64,
        size: 512,
        compression: "none",
        tasks: &[1, 8],
    },
    Case {
        label: "100 B, 8 partitions",
        partitions: 8,
        size: 100,
        compression: "none",
        tasks: &[1, 8],
    },
    Case {
        label: "10 KiB, 8 partitions",
        partitions: 8,
        size: 10 * 1024,
        compression: "none",
        tasks: &[1, 8],
    },
    Case {
        label: "512 B, 8 partitions, lz4 source",
        partitions: 8,
        size: 512,
        compression: "lz4",
        tasks: &[1, 8],
    },
    Case {
        label: "512 B, 8 partitions, zstd source",
        partitions: 8,
        size: 512,
        compression: "zstd",
        tasks: &[1, 8],
    },
];

/// Medians of one kind of run in one case.
struct Figures {
    mbps: f64,
    rps: f64,
    ratio: f64,
    peak_rss_mib: Option<f64>,
    cpu_s_per_gb: Option<f64>,
}

fn figures(runs: &[&ThroughputRow], pipe_mbps: f64) -> Figures {
    let mbps = median(&runs.iter().map(|r| r.mbps(r.own)).collect::<Vec<_>>());
    let cpu: Vec<f64> = runs.iter().filter_map(|r| r.cpu_s_per_gb()).collect();
    Figures {
        mbps,
        rps: median(&runs.iter().map(|r| r.rps(r.own)).collect::<Vec<_>>()),
        ratio: mbps / pipe_mbps,
        peak_rss_mib: runs
            .iter()
            .filter_map(|r| r.rss_kib)
            .max()
            .map(|k| k as f64 / 1024.0),
        cpu_s_per_gb: (!cpu.is_empty()).then(|| median(&cpu)),
    }
}

pub(super) async fn matrix(s: &Settings) -> BenchResult<()> {
    // `MIRRORSLICE_BENCH_CONSUMER`/`_PRODUCER` go on top of the task's defaults, alike for the
    // pipe and the tasks, so a setting is measured across the whole grid against a pipe that
    // has it too.
    let settings = SettingsSet {
        name: "the task's defaults + MIRRORSLICE_BENCH_CONSUMER/PRODUCER",
        consumer: s.consumer_extra.clone(),
        producer: s.producer_extra.clone(),
    };
    print_header(s);
    let mut verdicts = Vec::new();
    // `MIRRORSLICE_BENCH_CASES`: only the cases with these labels, separated by `;` (labels
    // hold commas), e.g. `512 B, 8 partitions;100 B, 8 partitions`.
    let only: Option<Vec<String>> = std::env::var("MIRRORSLICE_BENCH_CASES")
        .ok()
        .map(|v| v.split(';').map(|c| c.trim().to_string()).collect());
    let chosen = |case: &&Case| {
        only.as_ref()
            .is_none_or(|o| o.iter().any(|c| case.label == c.as_str()))
    };
    for case in CASES.iter().filter(chosen) {
        let records = (s.records * 512 / case.size as u64).max(case.partitions as u64);
        let per_partition = records.div_ceil(case.partitions as u64);
        let records = per_partition * case.partitions as u64;
        let cs = Settings {
            size: case.size,
            partitions: case.partitions,
            records,
            ..s.clone()
        };
        let topic = unique("benchmx-");
        create_topic(&s.a, &topic, case.partitions).await?;
        let t = Instant::now();
        let (size, compression) = (case.size, case.compression);
        produce(
            &s.a,
            &topic,
            case.partitions,
            per_partition,
            size,
            "key",
            compression,
        )?;
        eprintln!(
            "matrix: {}: seeded {records} records into {topic} in {:.1?}",
            case.label,
            t.elapsed()
        );
        let mut plan = Vec::new();
        for _ in 0..s.tp_reps {
            plan.push(Runner::Pipe);
            plan.extend(
                case.tasks
                    .iter()
                    .map(|&tasks| Runner::Mirrorslice { tasks }),
            );
        }
        let rows = run_plan(&cs, &topic, records, &settings, &plan).await?;
        delete_topics(&s.a, &[topic]).await;
        let kind = |want: Runner| -> Vec<&ThroughputRow> {
            rows.iter()
                .filter(|(r, _)| *r == want)
                .map(|(_, row)| row)
                .collect()
        };
        let pipe_runs = kind(Runner::Pipe);
        let pipe_mbps = median(&pipe_runs.iter().map(|r| r.mbps(r.own)).collect::<Vec<_>>());
        let pipe = figures(&pipe_runs, pipe_mbps);
        print_line(case, "pipe", &pipe, &[]);
        for &tasks in case.tasks {
            let f = figures(&kind(Runner::Mirrorslice { tasks }), pipe_mbps);
            let ratios = paired_cpu_ratios(&rows, tasks);
            let cpu_ratio = (!ratios.is_empty()).then(|| median(&ratios));
            print_line(case, &format!("tasks.max={tasks}"), &f, &ratios);
            if case.size == 512 && case.partitions == 8 && case.compression == "none" {
                verdicts.extend(verdict_line(tasks, &f, cpu_ratio));
            }
        }
    }
    println!("goals at 512 B, 8 partitions:");
    for v in verdicts {
        println!("{v}");
    }
    println!("   load average now {}", load());
    Ok(())
}

/// Each run's CPU per GB over the pipe's in the same repetition (the plan runs the pipe first
/// in each). Pairing cancels the drift between repetitions, which on a 2-core box shared with
/// the brokers moves the pipe's own CPU per GB by up to half from one run to the next.
fn paired_cpu_ratios(rows: &[(Runner, ThroughputRow)], tasks: u32) -> Vec<f64> {
    let mut pipe = None;
    let mut ratios = Vec::new();
    for (runner, row) in rows {
        match runner {
            Runner::Pipe => pipe = row.cpu_s_per_gb(),
            Runner::Mirrorslice { tasks: t } if *t == tasks => {
                ratios.extend(row.cpu_s_per_gb().zip(pipe).map(|(c, p)| c / p));
            }
            _ => {}
        }
    }
    ratios
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("?".to_string(), |v| format!("{v:.digits$}"))
}

fn print_header(s: &Settings) {
    println!();
    println!(
        "== 4. Throughput matrix (issue #14): medians of {} runs; MB = 10^6 bytes of key+value; own timers ==",
        s.tp_reps
    );
    for (who, extra) in [
        ("consumer", &s.consumer_extra),
        ("producer", &s.producer_extra),
    ] {
        if !extra.is_empty() {
            let set: Vec<String> = extra.iter().map(|(k, v)| format!("{k}={v}")).collect();
            println!(
                "   pipe and tasks, {who} on top of the defaults: {}",
                set.join(" ")
            );
        }
    }
    println!(
        "{:<34} {:<12} {:>7} {:>10} {:>6} {:>9} {:>9} {:>6} {:>11}",
        "case", "run", "MB/s", "records/s", "×pipe", "peak MiB", "CPU s/GB", "×pipe", "(range)"
    );
}

/// `cpu_ratios`: the run's paired CPU ratios (none for the pipe); their median and range.
fn print_line(case: &Case, run: &str, f: &Figures, cpu_ratios: &[f64]) {
    let (lo, hi) = cpu_ratios
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &r| {
            (lo.min(r), hi.max(r))
        });
    let range = (!cpu_ratios.is_empty()).then(|| format!("{lo:.2}–{hi:.2}"));
    println!(
        "{:<34} {:<12} {:>7.1} {:>10.0} {:>6.2} {:>9} {:>9} {:>6} {:>11}",
        case.label,
        run,
        f.mbps,
        f.rps,
        f.ratio,
        opt(f.peak_rss_mib, 1),
        opt(f.cpu_s_per_gb, 2),
        opt((!cpu_ratios.is_empty()).then(|| median(cpu_ratios)), 2),
        range.unwrap_or_default()
    );
}

/// #14's goals for one and eight tasks at 512 B.
fn verdict_line(tasks: u32, f: &Figures, cpu_ratio: Option<f64>) -> Option<String> {
    let rss_goal = match tasks {
        1 => 48.0,
        8 => 64.0,
        _ => return None,
    };
    Some(format!(
        "   tasks.max={tasks}: {:.2}× the pipe (goal ≥ 1.0: {}); peak RSS {} MiB (goal ≤ {rss_goal}: {}); CPU {}× the pipe's per GB (goal ≤ 1.0: {})",
        f.ratio,
        verdict(f.ratio >= 1.0),
        opt(f.peak_rss_mib, 1),
        f.peak_rss_mib.map_or("?", |m| verdict(m <= rss_goal)),
        opt(cpu_ratio, 2),
        cpu_ratio.map_or("?", |r| verdict(r <= 1.0)),
    ))
}
