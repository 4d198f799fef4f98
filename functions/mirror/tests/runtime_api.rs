//! The built `mirror` binary driven over the real Lambda Runtime API protocol.
//!
//! Why a hand-written stub instead of an emulator: the protocol is four HTTP calls, and owning
//! the server lets the test set each invocation's deadline, see *when* the response is posted
//! relative to it, and read the function's stdout (EMF) and stderr (JSON logs) separately. The
//! stub long-polls `GET /2018-06-01/runtime/invocation/next` until the test queues an
//! invocation, as Lambda does; once the test is done it answers `/next` with a 500, on which the
//! runtime client exits — so the process ends without being killed.
//!
//! Everything else is real: the local stack's brokers and moto (DynamoDB API) for the leases.

// The shared harness (`tests/common`) belongs to the root package and names that package's
// directory and CLI with `env!`. Textual macro scope lets this crate answer those two names
// (the root is two levels up; the CLI is not used here) and pass every other name through.
macro_rules! env {
    ("CARGO_MANIFEST_DIR") => {
        concat!(std::env!("CARGO_MANIFEST_DIR"), "/../..")
    };
    ("CARGO_BIN_EXE_mirrorslice") => {
        concat!(
            std::env!("CARGO_MANIFEST_DIR"),
            "/../../target/debug/mirrorslice"
        )
    };
    ($name:literal) => {
        std::env!($name)
    };
}

#[path = "../../../tests/common/mod.rs"]
mod common;

use common::TestRecord;
use mirrorslice::lease::dynamodb::DynamoLeaseStore;
use mirrorslice::lease::{task_key, LeaseStore};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const FUNCTION_ARN: &str = "arn:aws:lambda:us-east-1:123456789012:function:mirror";

/// One invocation the test hands to the function.
struct Invoke {
    id: String,
    body: String,
    /// Time from dispatch (the moment `/next` answers) to the deadline header.
    timeout: Duration,
}

/// What the function posted back for one invocation.
#[derive(Debug)]
struct Posted {
    id: String,
    /// `response` or `error`.
    kind: String,
    body: Value,
    /// `Lambda-Runtime-Function-Error-Type` header of an error post.
    error_type: Option<String>,
    /// When the invocation was dispatched and its deadline, as the stub set them.
    dispatched_ms: u64,
    deadline_ms: u64,
    /// When the post arrived.
    at_ms: u64,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A minimal Lambda Runtime API: HTTP/1.1 with keep-alive, one thread per connection.
struct RuntimeStub {
    addr: String,
    invokes: Option<mpsc::Sender<Invoke>>,
    posted: mpsc::Receiver<Posted>,
}

struct Request {
    method: String,
    path: String,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None; // client closed the connection
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
    }
    let mut body = Vec::new();
    if let Some(n) = headers.get("content-length") {
        body.resize(n.parse().ok()?, 0);
        reader.read_exact(&mut body).ok()?;
    } else if headers
        .get("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
    {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            if size == 0 {
                // Trailers (if any) end with an empty line.
                loop {
                    let mut t = String::new();
                    reader.read_line(&mut t).ok()?;
                    if t.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            body.extend_from_slice(&chunk[..size]);
        }
    }
    Some(Request {
        method,
        path,
        headers,
        body,
    })
}

fn write_response(stream: &mut TcpStream, status: &str, headers: &[(&str, String)], body: &[u8]) {
    let mut head = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
    let _ = stream.flush();
}

impl RuntimeStub {
    fn start() -> RuntimeStub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (invoke_tx, invoke_rx) = mpsc::channel::<Invoke>();
        let (posted_tx, posted_rx) = mpsc::channel::<Posted>();
        let invoke_rx = Arc::new(Mutex::new(invoke_rx));
        // Dispatch time and deadline of every invocation, for the posts.
        let dispatched: Arc<Mutex<HashMap<String, (u64, u64)>>> = Arc::default();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (invoke_rx, posted_tx, dispatched) =
                    (invoke_rx.clone(), posted_tx.clone(), dispatched.clone());
                std::thread::spawn(move || {
                    let mut writer = stream.try_clone().unwrap();
                    let mut reader = BufReader::new(stream);
                    while let Some(req) = read_request(&mut reader) {
                        serve(&req, &mut writer, &invoke_rx, &posted_tx, &dispatched);
                    }
                });
            }
        });
        RuntimeStub {
            addr,
            invokes: Some(invoke_tx),
            posted: posted_rx,
        }
    }

    fn invoke(&self, id: &str, body: Value, timeout: Duration) -> Posted {
        self.invokes
            .as_ref()
            .unwrap()
            .send(Invoke {
                id: id.to_string(),
                body: body.to_string(),
                timeout,
            })
            .unwrap();
        let posted = self
            .posted
            .recv_timeout(timeout + Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("no post for invocation {id}: {e}"));
        assert_eq!(posted.id, id);
        posted
    }

    /// From now on `/next` answers 500, and the runtime client exits.
    fn finish(&mut self) {
        self.invokes = None;
    }
}

fn serve(
    req: &Request,
    writer: &mut TcpStream,
    invoke_rx: &Mutex<mpsc::Receiver<Invoke>>,
    posted_tx: &mpsc::Sender<Posted>,
    dispatched: &Mutex<HashMap<String, (u64, u64)>>,
) {
    const NEXT: &str = "/2018-06-01/runtime/invocation/next";
    const PREFIX: &str = "/2018-06-01/runtime/invocation/";
    if req.method == "GET" && req.path == NEXT {
        // Long poll, like Lambda: answer when the test queues an invocation.
        let next = invoke_rx.lock().unwrap().recv();
        match next {
            Ok(inv) => {
                let at = now_ms();
                let deadline = at + inv.timeout.as_millis() as u64;
                dispatched
                    .lock()
                    .unwrap()
                    .insert(inv.id.clone(), (at, deadline));
                write_response(
                    writer,
                    "200 OK",
                    &[
                        ("Content-Type", "application/json".into()),
                        ("Lambda-Runtime-Aws-Request-Id", inv.id.clone()),
                        ("Lambda-Runtime-Deadline-Ms", deadline.to_string()),
                        ("Lambda-Runtime-Invoked-Function-Arn", FUNCTION_ARN.into()),
                        (
                            "Lambda-Runtime-Trace-Id",
                            "Root=1-5759e988-bd862e3fe1be46a994272793".into(),
                        ),
                    ],
                    inv.body.as_bytes(),
                );
            }
            Err(_) => write_response(writer, "500 Internal Server Error", &[], b"{}"),
        }
        return;
    }
    if req.method == "POST" {
        if let Some(rest) = req.path.strip_prefix(PREFIX) {
            if let Some((id, kind)) = rest.split_once('/') {
                let (dispatched_ms, deadline_ms) = dispatched
                    .lock()
                    .unwrap()
                    .get(id)
                    .copied()
                    .unwrap_or_default();
                let _ = posted_tx.send(Posted {
                    id: id.to_string(),
                    kind: kind.to_string(),
                    body: serde_json::from_slice(&req.body).unwrap_or(Value::Null),
                    error_type: req
                        .headers
                        .get("lambda-runtime-function-error-type")
                        .cloned(),
                    dispatched_ms,
                    deadline_ms,
                    at_ms: now_ms(),
                });
                write_response(writer, "202 Accepted", &[], br#"{"status":"OK"}"#);
                return;
            }
        }
    }
    write_response(writer, "404 Not Found", &[], b"{}");
}

/// The `mirror` process, with its stdout and stderr collected as they arrive.
struct Function {
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

fn collect(mut pipe: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let out = Arc::new(Mutex::new(String::new()));
    let sink = out.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    out
}

impl Function {
    fn start(runtime_api: &str, config: &PathBuf, table: &str) -> Function {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mirror"));
        cmd.env("AWS_LAMBDA_RUNTIME_API", runtime_api)
            .env("AWS_LAMBDA_FUNCTION_NAME", "mirror")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/mirror")
            .env("AWS_LAMBDA_LOG_STREAM_NAME", common::unique("stream"))
            .env("MIRRORSLICE_CONFIG", config)
            .env("MIRRORSLICE_LEASE_TABLE", table)
            .env_remove("MIRRORSLICE_DEADLINE_MARGIN")
            .env_remove("MIRRORSLICE_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in common::stack().env() {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start the mirror binary");
        let stdout = collect(child.stdout.take().unwrap());
        let stderr = collect(child.stderr.take().unwrap());
        Function {
            child,
            stdout,
            stderr,
        }
    }

    fn stdout(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Wait for the process to exit on its own (after [`RuntimeStub::finish`]).
    fn wait_exit(&mut self, within: Duration) -> std::process::ExitStatus {
        let until = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > until {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("mirror did not exit after the runtime API failed");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Function {
    fn drop(&mut self) {
        // Only if a failed assertion left it running; normally it has exited already.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// An mm2.properties for one flow between the stack's clusters, with aliases and a topic filter
/// that are this test's own (the brokers are shared).
fn flow_config(source: &str, target: &str, extra: &str) -> String {
    let stack = common::stack();
    format!(
        "clusters = {source}, {target}\n\
         {source}.bootstrap.servers = {a}\n\
         {target}.bootstrap.servers = {b}\n\
         {source}->{target}.enabled = true\n\
         {source}->{target}.topics = .*-{source}\n\
         {target}->{source}.emit.heartbeats.enabled = false\n\
         replication.factor = 1\n\
         offset-syncs.topic.replication.factor = 1\n\
         checkpoints.topic.replication.factor = 1\n\
         heartbeats.topic.replication.factor = 1\n\
         config.storage.replication.factor = 1\n\
         offset.storage.replication.factor = 1\n\
         status.storage.replication.factor = 1\n\
         {target}.offset.flush.interval.ms = 200\n\
         {extra}\n",
        a = stack.a,
        b = stack.b,
    )
}

/// The EMF lines the function printed on stdout, by flow.
fn emf_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<Value>(l)
                .unwrap_or_else(|e| panic!("stdout holds only EMF JSON lines ({e}): {l}"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invocations_over_the_runtime_api() {
    let stack = common::stack();
    let source = common::unique("lsrc").replace('-', "");
    let target = common::unique("ldst").replace('-', "");
    let flow = format!("{source}->{target}");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mm2.properties");
    // The first data slice sends one record per produce request, so a short deadline cuts it.
    let throttled = flow_config(
        &source,
        &target,
        &format!("{target}.producer.batch.num.messages = 1"),
    );
    std::fs::write(&config, &throttled).unwrap();

    let table = common::unique("mirror-leases");
    let leases = DynamoLeaseStore::with_endpoint(&stack.dynamodb, "us-east-1", &table);
    leases.create_table_if_missing().await.unwrap();

    let topic = format!("fn-{source}");
    let partitions = 4;
    common::create_topic(&stack.a, &topic, partitions, &[]).await;
    // Enough that the throttled copy (one record per request) cannot finish before the 8 s
    // deadline, whatever the producer settings.
    let total = 60_000usize;
    let data: Vec<TestRecord> = (0..total)
        .map(|i| TestRecord {
            partition: (i % partitions as usize) as i32,
            key: Some(format!("{i}").into_bytes()),
            value: Some(vec![b'v'; 200]),
            headers: vec![],
            timestamp: Some(1_700_000_000_000 + i as i64),
        })
        .collect();
    common::produce(&stack.a, &topic, &data).await;

    let mut stub = RuntimeStub::start();
    let mut function = Function::start(&stub.addr, &config, &table);

    // 1. A flow the config does not have: a function error with its own type.
    let posted = stub.invoke(
        "inv-unknown",
        serde_json::json!({"flow": format!("{target}->nowhere")}),
        Duration::from_secs(20),
    );
    assert_eq!(posted.kind, "error", "{posted:?}");
    assert_eq!(posted.body["errorType"], "UnknownFlow", "{posted:?}");
    // lambda_runtime sends the header as "unhandled"; the type that shows is in the body.
    assert!(posted.error_type.is_some(), "{posted:?}");
    assert!(
        posted.body["errorMessage"]
            .as_str()
            .unwrap()
            .contains("nowhere"),
        "{posted:?}"
    );

    // 2. dry_run returns the plan of the flow.
    let posted = stub.invoke(
        "inv-plan",
        serde_json::json!({"flow": flow, "dry_run": true}),
        Duration::from_secs(20),
    );
    assert_eq!(posted.kind, "response", "{posted:?}");
    assert_eq!(posted.body["herder_pairs"], serde_json::json!([flow]));

    // 3. Another invocation holds the task's lease: a successful no-op.
    let foreign = leases
        .try_acquire(
            &task_key(&flow, "MirrorSourceConnector", 0),
            "another-invocation",
            Duration::from_secs(120),
        )
        .await
        .unwrap()
        .expect("lease is free");
    let posted = stub.invoke(
        "inv-held",
        serde_json::json!({"flow": flow}),
        Duration::from_secs(20),
    );
    assert_eq!(posted.kind, "response", "{posted:?}");
    let report = &posted.body;
    assert_eq!(report["records"], 0, "{report:#}");
    assert_eq!(report["tasks"][0]["run"], "held_elsewhere", "{report:#}");
    assert_eq!(report["caught_up"], false);
    leases.release(&foreign).await.unwrap();

    // 4. More data than fits before an 8 s deadline: the slice stops, commits and answers in
    // time, not caught up.
    let timeout = Duration::from_secs(8);
    let posted = stub.invoke("inv-cut", serde_json::json!({"flow": flow}), timeout);
    assert_eq!(posted.kind, "response", "{posted:?}");
    let report = posted.body.clone();
    let first_records = report["records"].as_u64().unwrap();
    assert!(first_records > 0, "copied something: {report:#}");
    assert!(
        (first_records as usize) < total,
        "the slice must be cut by its deadline: {report:#}"
    );
    assert_eq!(report["caught_up"], false, "{report:#}");
    assert_eq!(report["ok"], true, "{report:#}");
    assert!(
        posted.at_ms < posted.deadline_ms,
        "posted {} ms after the deadline",
        posted.at_ms - posted.deadline_ms
    );
    // Time left before the *slice* deadline (invocation deadline less the function's margin)
    // when the slice's last commit ended. Printed, not asserted: what the function promises is
    // the post before the invocation deadline, checked above; the default margin is sized from
    // this number.
    let margin_ms = report["deadline_margin_ms"].as_i64().unwrap();
    eprintln!(
        "deadline slice: {first_records} records in {} ms; slice deadline margin {margin_ms} ms; \
         response posted {} ms before the invocation deadline ({} ms after dispatch)",
        report["duration_ms"],
        posted.deadline_ms - posted.at_ms,
        posted.at_ms - posted.dispatched_ms,
    );

    // 5. The next invocations continue where it stopped; the config is re-read, so dropping the
    // throttle takes effect at once.
    std::fs::write(&config, flow_config(&source, &target, "")).unwrap();
    let mut copied = first_records;
    let mut last = Value::Null;
    for n in 0..5 {
        let posted = stub.invoke(
            &format!("inv-more-{n}"),
            serde_json::json!({"flow": flow}),
            Duration::from_secs(60),
        );
        assert_eq!(posted.kind, "response", "{posted:?}");
        assert!(posted.at_ms < posted.deadline_ms);
        copied += posted.body["records"].as_u64().unwrap();
        last = posted.body;
        if last["caught_up"] == true {
            break;
        }
    }
    assert_eq!(last["caught_up"], true, "{last:#}");
    assert_eq!(
        copied, total as u64,
        "the reports count each record once across slices"
    );
    let got = common::consume_all(&stack.b, &format!("{source}.{topic}"), partitions).await;
    let keys: BTreeSet<Vec<u8>> = got.iter().filter_map(|r| r.key.clone()).collect();
    assert_eq!(keys.len(), total, "every record reached the target");
    // At-least-once: records still in flight when the cut slice gave up waiting for their
    // acknowledgements may have landed without being committed, and are copied again.
    assert!(got.len() >= total);
    eprintln!(
        "target holds {} records for {total} sources ({} re-copied after the deadline cut)",
        got.len(),
        got.len() - total
    );

    // One EMF line per slice that ran, on stdout, nothing else there.
    stub.finish();
    let status = function.wait_exit(Duration::from_secs(20));
    assert!(!status.success(), "exits with an error once /next fails");
    let stdout = function.stdout();
    let emf = emf_lines(&stdout);
    let slices = 1 + 1 + (copied > first_records) as usize; // held + cut + at least one more
    assert!(emf.len() >= slices, "{stdout}");
    let mut records_in_emf = 0;
    for line in &emf {
        let directive = &line["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "mirrorslice", "{line}");
        assert_eq!(directive["Dimensions"], serde_json::json!([["Flow"]]));
        assert_eq!(line["Flow"], Value::from(flow.clone()));
        records_in_emf += line["Records"].as_u64().unwrap();
    }
    assert_eq!(records_in_emf, total as u64, "EMF Records add up: {stdout}");
    let cut = &emf[1];
    assert_eq!(cut["CaughtUp"], 0);
    assert_eq!(cut["Records"], first_records);

    // Logs are JSON lines on stderr.
    let stderr = function.stderr();
    let log_lines: Vec<Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        log_lines
            .iter()
            .any(|l| l["fields"]["message"] == "slice starting"),
        "{stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "no ANSI colours in Lambda logs");
    // No task accumulates across invocations: the live task count after each slice is flat.
    let alive: Vec<u64> = log_lines
        .iter()
        .filter_map(|l| l["fields"]["alive_tasks"].as_u64())
        .collect();
    eprintln!("alive tokio tasks after each slice: {alive:?}");
    let per_slice: BTreeMap<usize, u64> = alive.iter().copied().enumerate().collect();
    assert!(alive.len() >= 3, "{stderr}");
    let first = per_slice[&0];
    assert!(
        alive.iter().all(|&n| n <= first + 2),
        "tokio tasks pile up across invocations: {alive:?}"
    );
}
