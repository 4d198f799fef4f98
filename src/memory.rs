//! Process-wide memory settings, applied first thing in `main`.
//!
//! A slice's memory is mostly librdkafka's: fetch responses held until their records are
//! forwarded, and the producer's copies of records in flight (see the prefetch budget in
//! `connectors::source::task`). librdkafka allocates with the C allocator from many threads,
//! so glibc's malloc settings decide both what the process holds and what the copy costs.
//!
//! * **Arenas.** glibc gives each thread that contends an arena of its own (up to 8 per core),
//!   each keeping freed memory for reuse. Two are enough for our few busy threads; measured on
//!   a 300k-record copy, peak RSS fell by 2–5 MiB at no throughput cost. On Lambda, memory is
//!   what an invocation is billed by.
//! * **Trimming.** By default glibc hands a heap's free top back to the kernel once it exceeds
//!   the trim threshold, which follows the largest block it has freed (twice the dynamic mmap
//!   threshold: ~2 MiB after the first 1 MiB fetch response). A copy frees and allocates
//!   megabytes every few milliseconds (fetch responses, produce requests, records in flight),
//!   so the heap shrank and grew without end: each regrowth faults its pages in again and the
//!   kernel zeroes them. Copying 2 GB of 10 KiB records took 90k–283k page faults and ~800
//!   `brk` calls against 6–8k and ~30 with the thresholds below, and 8–23 % less system CPU
//!   (medians of two batches of alternating runs; `docs/throughput.md`). The heap now keeps
//!   up to 16 MiB of free top, and blocks up to 4 MiB (every fetch response and produce
//!   request at the default sizes) come from it; peak RSS rose by 1–5 MiB (blocks that were
//!   mapped and unmapped now share the heap).

/// One glibc `mallopt` parameter we set, and the two ways an operator sets it instead
/// (glibc's own: the operator's choice wins).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
struct MallocSetting {
    param: libc::c_int,
    value: libc::c_int,
    /// Its `MALLOC_*` environment variable.
    variable: &'static str,
    /// Its name in `GLIBC_TUNABLES`.
    tunable: &'static str,
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MALLOC_SETTINGS: &[MallocSetting] = &[
    MallocSetting {
        param: libc::M_ARENA_MAX,
        value: 2,
        variable: "MALLOC_ARENA_MAX",
        tunable: "glibc.malloc.arena_max",
    },
    MallocSetting {
        param: libc::M_MMAP_THRESHOLD,
        value: 4 << 20,
        variable: "MALLOC_MMAP_THRESHOLD_",
        tunable: "glibc.malloc.mmap_threshold",
    },
    MallocSetting {
        param: libc::M_TRIM_THRESHOLD,
        value: 16 << 20,
        variable: "MALLOC_TRIM_THRESHOLD_",
        tunable: "glibc.malloc.trim_threshold",
    },
];

/// Two malloc arenas, heaps that keep 16 MiB of free top, and blocks up to 4 MiB from the
/// heap (see the module's comment), each unless the operator set it through glibc's
/// `MALLOC_*` variable or `GLIBC_TUNABLES`. Must run before any thread starts (tokio,
/// librdkafka): threads pick their arena on first allocation. A no-op on other C libraries.
pub fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    for s in MALLOC_SETTINGS {
        if operator_set(s.variable, s.tunable, |name| std::env::var(name).ok()) {
            continue;
        }
        // SAFETY: mallopt only sets an allocator parameter; called before other threads exist.
        if unsafe { libc::mallopt(s.param, s.value) } != 1 {
            // Not fatal: glibc's defaults only cost memory or CPU.
            eprintln!("warning: mallopt({}, {}) was refused", s.variable, s.value);
        }
    }
}

/// Whether the operator set a malloc parameter: by its `MALLOC_*` variable, or by its name in
/// `GLIBC_TUNABLES` (`name=value` pairs separated by `:`).
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
fn operator_set(variable: &str, tunable: &str, env: impl Fn(&str) -> Option<String>) -> bool {
    env(variable).is_some()
        || env("GLIBC_TUNABLES").is_some_and(|tunables| {
            tunables
                .split(':')
                .any(|pair| pair.split('=').next() == Some(tunable))
        })
}

#[cfg(test)]
mod tests {
    use super::operator_set;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_operators_malloc_variable_or_tunable_wins() {
        let trim = ("MALLOC_TRIM_THRESHOLD_", "glibc.malloc.trim_threshold");
        assert!(!operator_set(trim.0, trim.1, env(&[])));
        assert!(operator_set(
            trim.0,
            trim.1,
            env(&[("MALLOC_TRIM_THRESHOLD_", "131072")])
        ));
        let tunables = [(
            "GLIBC_TUNABLES",
            "glibc.malloc.arena_max=4:glibc.malloc.trim_threshold=131072",
        )];
        assert!(operator_set(trim.0, trim.1, env(&tunables)));
        // A tunable that only starts with the name is another one.
        let mmap = ("MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap");
        assert!(!operator_set(mmap.0, mmap.1, env(&tunables)));
        let other = [("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=65536")];
        assert!(!operator_set(trim.0, trim.1, env(&other)));
    }
}
