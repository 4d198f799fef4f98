//! Seed a topic with records for demos and benchmarks.
//!
//! `cargo run --release --example seed -- --bootstrap 127.0.0.1:19092 --topic orders \
//!     --partitions 8 --records 100000 --size 512`
//!
//! Creates the topic when missing (with `--partitions`), then produces `--records` records of
//! `--size` bytes spread round-robin over the partitions, with a key, a header and the current
//! time as timestamp, and waits for every delivery.

use clap::Parser;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    #[arg(long, default_value = "127.0.0.1:19092")]
    bootstrap: String,
    #[arg(long)]
    topic: String,
    #[arg(long, default_value_t = 4)]
    partitions: i32,
    #[arg(long, default_value_t = 1000)]
    records: u64,
    #[arg(long, default_value_t = 512)]
    size: usize,
    /// The topic's `compression.type` when it is created (e.g. lz4, zstd).
    #[arg(long, default_value = "producer")]
    compression: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &args.bootstrap)
        .create()?;
    let created = admin
        .create_topics(
            &[
                NewTopic::new(&args.topic, args.partitions, TopicReplication::Fixed(1))
                    .set("compression.type", &args.compression),
            ],
            &AdminOptions::new(),
        )
        .await?;
    for r in created {
        match r {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((t, e)) => anyhow::bail!("create {t}: {e}"),
        }
    }

    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", &args.bootstrap)
        .set("linger.ms", "10")
        .set("enable.idempotence", "true")
        .create()?;
    let value = vec![b'x'; args.size];
    let start = Instant::now();
    for i in 0..args.records {
        let key = format!("key-{i}");
        let partition = (i % args.partitions as u64) as i32;
        let mut record = BaseRecord::to(&args.topic)
            .partition(partition)
            .key(key.as_bytes())
            .payload(value.as_slice())
            .timestamp(chrono::Utc::now().timestamp_millis())
            .headers(OwnedHeaders::new().insert(Header {
                key: "seed",
                value: Some("1"),
            }));
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    record = back;
                    producer.poll(Duration::from_millis(10));
                }
                Err((e, _)) => return Err(e.into()),
            }
        }
        producer.poll(Duration::ZERO);
    }
    producer.flush(Duration::from_secs(60))?;
    eprintln!(
        "seeded {} records of {} bytes into {} ({} partitions) in {:.2?}",
        args.records,
        args.size,
        args.topic,
        args.partitions,
        start.elapsed()
    );
    Ok(())
}
