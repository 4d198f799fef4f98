//! A TCP proxy that holds every byte for half a round trip in each direction: a distant
//! cluster on loopback, for measuring the copy against one (`docs/throughput.md`, "a target
//! one round trip away").
//!
//! `cargo run --release --example delay_proxy -- --listen 127.0.0.1:29197 \
//!     --upstream 127.0.0.1:29196 --rtt-ms 20`
//!
//! Kafka clients connect to the addresses a broker advertises, so the broker needs a listener
//! on the upstream port that advertises the proxy's (`advertised.listeners`), and clients
//! bootstrap through the proxy. Bandwidth is not limited, and the proxy buffers what the
//! upstream does not take yet: it adds latency only.

use clap::Parser;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// Where clients connect.
    #[arg(long)]
    listen: String,
    /// Where the proxy connects for each client.
    #[arg(long)]
    upstream: String,
    /// The round trip added: each direction holds bytes for half of it.
    #[arg(long)]
    rtt_ms: f64,
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let one_way = Duration::from_secs_f64(args.rtt_ms / 2000.0);
    let listener = TcpListener::bind(&args.listen)?;
    eprintln!(
        "delay_proxy: {} -> {}, {} ms round trip",
        args.listen, args.upstream, args.rtt_ms
    );
    for client in listener.incoming() {
        let client = client?;
        let upstream = match TcpStream::connect(&args.upstream) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("delay_proxy: {}: {e}", args.upstream);
                continue;
            }
        };
        for s in [&client, &upstream] {
            s.set_nodelay(true)?;
        }
        forward(client.try_clone()?, upstream.try_clone()?, one_way);
        forward(upstream, client, one_way);
    }
    Ok(())
}

/// Copies `from` to `to`, each chunk written `delay` after it was read, in order. A reader
/// thread stamps chunks as they arrive, so the delay does not slow the stream down.
fn forward(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let (chunks, due) = mpsc::channel::<(Instant, Vec<u8>)>();
    thread::spawn(move || {
        let mut buf = vec![0u8; 256 * 1024];
        while let Ok(n @ 1..) = from.read(&mut buf) {
            if chunks
                .send((Instant::now() + delay, buf[..n].to_vec()))
                .is_err()
            {
                break;
            }
        }
        let _ = from.shutdown(Shutdown::Read);
    });
    thread::spawn(move || {
        for (at, chunk) in due {
            thread::sleep(at.saturating_duration_since(Instant::now()));
            if to.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}
