//! Fault injection for tests: servers of a test's own that it may freeze (SIGSTOP) without
//! disturbing the shared stack other tests run against, and a guard that always undoes a freeze.
//! Everything is on loopback and ended by PID.

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::ClientConfig;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Sends `sig` to `pid`.
pub fn signal(pid: u32, sig: Signal) {
    kill(Pid::from_raw(pid as i32), sig).expect("signal a process this test started");
}

/// A port nothing listens on right now (the OS picks it; a race with other tests is unlikely).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

fn wait_for_port(port: u16, child: &mut Child, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Some(status) = child.try_wait().expect("poll the child") {
            panic!("{what} exited during start-up: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "{what} not listening on {port} after 30 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A port for an Apache Kafka node whose next port, for its KRaft controller, is free too,
/// chosen below the ephemeral range (and below the local stack's 29192): the JVM binds them
/// seconds after this check, and a port from the ephemeral range can meanwhile become the
/// local end of any connection a parallel test opens ("Address already in use" at start-up).
fn kafka_ports() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    // A machine whose ephemeral range starts low still gets 1,000 ports to choose from.
    let (low, high) = (20_000u16, ephemeral.clamp(21_000, 29_000) - 1);
    for _ in 0..1_000 {
        let random = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let port = low + (random % u64::from(high - low)) as u16;
        let free = |p: u16| TcpListener::bind(("127.0.0.1", p)).is_ok();
        if free(port) && free(port + 1) {
            return port;
        }
    }
    panic!("no two free consecutive loopback ports in {low}..{high}");
}

/// Starts an Apache Kafka node on `port` (and `port + 1` for its controller) with its data in
/// `data`, logging to `data/<log>`; returns once it logs "Kafka Server started" (at most 90 s).
/// With `keep_data` it starts the node formatted there before, with its data.
fn start_kafka(port: u16, data: &std::path::Path, log: &str, keep_data: bool) -> Child {
    let log_path = data.join(log);
    let log = std::fs::File::create(&log_path).expect("the broker's log file");
    let mut child = Command::new(super::stack_script())
        .arg("kafka-exec")
        .arg(port.to_string())
        .arg(data.join("logs"))
        .args(keep_data.then_some("--keep-data"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log file"))
        .stderr(log)
        .spawn()
        .expect("start Apache Kafka");
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let logged = std::fs::read_to_string(&log_path).unwrap_or_default();
        if logged.contains("Kafka Server started") {
            return child;
        }
        if let Some(status) = child.try_wait().expect("poll the broker") {
            panic!("Apache Kafka on {port} exited during start-up ({status}):\n{logged}");
        }
        assert!(
            Instant::now() < deadline,
            "Apache Kafka on {port} not started after 90 s:\n{logged}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits for `child` to exit, at most `limit` (panics then); its output and how long it took.
pub fn wait_for_exit(mut child: Child, limit: Duration) -> (std::process::Output, Duration) {
    let started = Instant::now();
    while child.try_wait().expect("poll the child").is_none() {
        assert!(started.elapsed() < limit, "no exit after {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = started.elapsed();
    (child.wait_with_output().expect("the child's output"), took)
}

/// Polls the sum of `topic`'s high watermarks on `bootstrap` (one cheap request per partition,
/// not a read) until it reaches `at_least`: for freezing a writer mid-copy. Panics after 60 s.
pub fn wait_for_copied(bootstrap: &str, topic: &str, partitions: i32, at_least: i64) {
    let started = Instant::now();
    while super::partition_count(bootstrap, topic).is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no {topic} on {bootstrap}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let reached =
        Watermarks::new(bootstrap).wait_for(topic, partitions, at_least, Duration::from_secs(60));
    assert!(reached, "{topic} below {at_least} records after 60 s");
}

/// Reads a topic's high watermarks (cheap requests, not a read of the records).
pub struct Watermarks(BaseConsumer);

impl Watermarks {
    pub fn new(bootstrap: &str) -> Watermarks {
        let consumer = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .create()
            .expect("a watermark consumer");
        Watermarks(consumer)
    }

    /// The sum of `topic`'s high watermarks over partitions `0..partitions` (a partition that
    /// does not answer within 1 s counts 0).
    pub fn total(&self, topic: &str, partitions: i32) -> i64 {
        (0..partitions)
            .filter_map(|p| {
                self.0
                    .fetch_watermarks(topic, p, Duration::from_secs(1))
                    .ok()
            })
            .map(|(_, high)| high)
            .sum()
    }

    /// Polls [`Watermarks::total`] every 2 ms until it reaches `at_least`; false after `limit`.
    /// A watcher that has asked once already is connected: it sees a writer's progress within
    /// a few milliseconds.
    pub fn wait_for(&self, topic: &str, partitions: i32, at_least: i64, limit: Duration) -> bool {
        let started = Instant::now();
        while started.elapsed() < limit {
            if self.total(topic, partitions) >= at_least {
                return true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    }
}

/// A server process of this test only: continued (if frozen) and killed when dropped.
pub struct PrivateServer {
    child: Child,
    pub port: u16,
    /// An Apache Kafka node's log directory, deleted with the server.
    _data: Option<tempfile::TempDir>,
}

impl PrivateServer {
    /// A broker of the kind the shared stack runs (`MIRRORSLICE_BROKER`): fault tests freeze
    /// the broker our users run when the suite runs against Apache Kafka.
    pub fn broker() -> PrivateServer {
        if super::stack().is_kafka() {
            PrivateServer::kafka()
        } else {
            PrivateServer::tansu()
        }
    }

    /// An Apache Kafka node (`stack.sh kafka-exec`, which becomes the broker process) on free
    /// loopback ports ([`kafka_ports`]). Up once it logs
    /// "Kafka Server started"; its log is kept in its data directory for a failing test.
    pub fn kafka() -> PrivateServer {
        let port = kafka_ports();
        let data = tempfile::tempdir().expect("a data directory");
        let child = start_kafka(port, data.path(), "broker.log", false);
        PrivateServer {
            child,
            port,
            _data: Some(data),
        }
    }

    /// The partition directories of an Apache Kafka node (`<topic>-<partition>/`).
    pub fn log_dir(&self) -> std::path::PathBuf {
        let data = self._data.as_ref().expect("an Apache Kafka node");
        data.path().join("logs")
    }

    /// Kills an Apache Kafka node (SIGKILL, as a crash) and starts it again on the same port
    /// and data: up again once it logs "Kafka Server started".
    pub fn restart(&mut self) {
        signal(self.child.id(), Signal::SIGCONT);
        let _ = self.child.kill();
        let _ = self.child.wait();
        let data = self._data.as_ref().expect("an Apache Kafka node").path();
        let log = format!("broker-restarted-{}.log", super::unique("at"));
        self.child = start_kafka(self.port, data, &log, true);
    }

    /// A tansu broker with memory storage on a free loopback port.
    pub fn tansu() -> PrivateServer {
        let out = Command::new(super::stack_script())
            .arg("tansu-bin")
            .output()
            .expect("run stack.sh tansu-bin");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bin = String::from_utf8(out.stdout).unwrap().trim().to_string();
        let port = free_port();
        let url = format!("tcp://127.0.0.1:{port}");
        let mut child = Command::new(bin)
            .args(["broker", "--cluster-id", &format!("private-{port}")])
            .args(["--listener-url", &url, "--advertised-listener-url", &url])
            .args(["--storage-engine", "memory://tansu/"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start tansu");
        wait_for_port(port, &mut child, "tansu");
        PrivateServer {
            child,
            port,
            _data: None,
        }
    }

    /// A DynamoDB-API server (moto, through the stack's launcher) on a free loopback port.
    pub fn moto() -> PrivateServer {
        let launcher = super::stack_script().with_file_name("moto_server.py");
        let port = free_port();
        let mut child = Command::new("python3")
            .arg(launcher)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto");
        wait_for_port(port, &mut child, "moto");
        PrivateServer {
            child,
            port,
            _data: None,
        }
    }

    /// `host:port`, e.g. a Kafka bootstrap address.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Freeze the server until the returned guard is dropped (or [`Frozen::thaw`]).
    pub fn freeze(&self) -> Frozen {
        Frozen::pid(self.child.id())
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        signal(self.child.id(), Signal::SIGCONT);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A frozen (SIGSTOPped) process, continued when dropped: a failing test never leaves it
/// stopped.
pub struct Frozen {
    pid: Option<u32>,
}

impl Frozen {
    pub fn pid(pid: u32) -> Frozen {
        signal(pid, Signal::SIGSTOP);
        Frozen { pid: Some(pid) }
    }

    /// SIGCONT now; returns when it was sent.
    pub fn thaw(mut self) -> Instant {
        if let Some(pid) = self.pid.take() {
            signal(pid, Signal::SIGCONT);
        }
        Instant::now()
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        if let Some(pid) = self.pid.take() {
            signal(pid, Signal::SIGCONT);
        }
    }
}

/// Waits until the lease `key` has expired for every reader (its expiry plus the store's clock
/// skew allowance is past), as a frozen holder's lease does: at most 60 s.
pub async fn wait_for_lease_expiry(
    leases: &mirrorslice::lease::dynamodb::DynamoLeaseStore,
    key: &str,
) {
    use mirrorslice::lease::LeaseStore;
    let skew = mirrorslice::lease::dynamodb::DEFAULT_CLOCK_SKEW.as_millis() as i64;
    let expired = Instant::now() + Duration::from_secs(60);
    loop {
        let lease = leases
            .describe(key)
            .await
            .unwrap()
            .expect("the frozen holder's lease");
        if lease.expires_at_ms + skew < chrono::Utc::now().timestamp_millis() {
            return;
        }
        assert!(
            Instant::now() < expired,
            "the lease never expired: {lease:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
