//! A stand-in for the Lambda Runtime API and the `mirror` process it drives, shared by the
//! function's tests. See `runtime_api.rs` for why the stub is hand-written.

#![allow(dead_code)] // each test binary uses a different subset of the harness

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

use crate::common;
use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub const FUNCTION_ARN: &str = "arn:aws:lambda:us-east-1:123456789012:function:mirror";

/// One invocation the test hands to the function.
pub struct Invoke {
    pub id: String,
    pub body: String,
    /// Time from dispatch (the moment `/next` answers) to the deadline header.
    pub timeout: Duration,
}

/// What the function posted back for one invocation.
#[derive(Debug)]
pub struct Posted {
    pub id: String,
    /// `response` or `error`.
    pub kind: String,
    pub body: Value,
    /// `Lambda-Runtime-Function-Error-Type` header of an error post.
    pub error_type: Option<String>,
    /// When the invocation was dispatched and its deadline, as the stub set them.
    pub dispatched_ms: u64,
    pub deadline_ms: u64,
    /// When the post arrived.
    pub at_ms: u64,
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A minimal Lambda Runtime API: HTTP/1.1 with keep-alive, one thread per connection.
pub struct RuntimeStub {
    pub addr: String,
    pub invokes: Option<mpsc::Sender<Invoke>>,
    pub posted: mpsc::Receiver<Posted>,
}

pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

pub fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
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

pub fn write_response(
    stream: &mut TcpStream,
    status: &str,
    headers: &[(&str, String)],
    body: &[u8],
) {
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
    pub fn start() -> RuntimeStub {
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

    /// Hands the function an invocation and waits for its post (at most 30 s past its
    /// deadline).
    pub fn invoke(&self, id: &str, body: Value, timeout: Duration) -> Posted {
        self.dispatch(id, body, timeout);
        self.wait_posted(id, timeout + Duration::from_secs(30))
    }

    /// Queues an invocation for the function's next `/next` poll, without waiting for its post.
    pub fn dispatch(&self, id: &str, body: Value, timeout: Duration) {
        self.invokes
            .as_ref()
            .unwrap()
            .send(Invoke {
                id: id.to_string(),
                body: body.to_string(),
                timeout,
            })
            .unwrap();
    }

    /// The post of invocation `id` (the next post; panics after `within`).
    pub fn wait_posted(&self, id: &str, within: Duration) -> Posted {
        let posted = self
            .posted
            .recv_timeout(within)
            .unwrap_or_else(|e| panic!("no post for invocation {id}: {e}"));
        assert_eq!(posted.id, id);
        posted
    }

    /// From now on `/next` answers 500, and the runtime client exits.
    pub fn finish(&mut self) {
        self.invokes = None;
    }
}

pub fn serve(
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
pub struct Function {
    pub child: Child,
    pub stdout: Arc<Mutex<String>>,
    pub stderr: Arc<Mutex<String>>,
}

pub fn collect(mut pipe: impl Read + Send + 'static) -> Arc<Mutex<String>> {
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
    pub fn start(runtime_api: &str, config: &PathBuf, table: &str) -> Function {
        Function::start_with(runtime_api, config, table, &[])
    }

    /// [`Function::start`] with more environment (set last: it wins over the stack's).
    pub fn start_with(
        runtime_api: &str,
        config: &PathBuf,
        table: &str,
        env: &[(&str, &str)],
    ) -> Function {
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
        cmd.envs(env.iter().copied());
        let mut child = cmd.spawn().expect("start the mirror binary");
        let stdout = collect(child.stdout.take().unwrap());
        let stderr = collect(child.stderr.take().unwrap());
        Function {
            child,
            stdout,
            stderr,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn stdout(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Wait for the process to exit on its own (after [`RuntimeStub::finish`]).
    pub fn wait_exit(&mut self, within: Duration) -> std::process::ExitStatus {
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
pub fn flow_config(source: &str, target: &str, extra: &str) -> String {
    let extra = format!("{target}.offset.flush.interval.ms = 200\n{extra}");
    common::flow_properties(source, target, &extra)
}

/// The EMF lines the function printed on stdout, by flow.
pub fn emf_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<Value>(l)
                .unwrap_or_else(|e| panic!("stdout holds only EMF JSON lines ({e}): {l}"))
        })
        .collect()
}
