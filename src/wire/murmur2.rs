//! Kafka's murmur2 partitioner (`org.apache.kafka.common.utils.Utils.murmur2`).
//!
//! Connect's offsets producer uses the default partitioner, so a source-offset record for a key
//! lands on `toPositive(murmur2(keyBytes)) % numPartitions` (mm2-compat §4.7). If we put the
//! same key on another partition of `mm2-offsets.<source>.internal`, a Java MM2 could read a
//! stale value there, because there is no ordering across partitions. So this must be Java's
//! algorithm bit for bit: seed `0x9747b28c`, little-endian 4-byte blocks, signed 32-bit
//! arithmetic that wraps, unsigned shifts (`>>>`), and the fall-through tail switch.
//!
//! Test vectors are taken from Kafka's `clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java`
//! (`testMurmur2`) and from mm2-compat §4.7.

const SEED: u32 = 0x9747_b28c;
const M: i32 = 0x5bd1_e995;
const R: u32 = 24;

/// Java's `>>>` on an `int`.
fn ushr(x: i32, n: u32) -> i32 {
    ((x as u32) >> n) as i32
}

/// `Utils.murmur2(byte[])`: the 32-bit murmur2 hash as Java computes it (a signed `int`).
pub fn murmur2(data: &[u8]) -> i32 {
    let length = data.len();
    let mut h: i32 = (SEED as i32) ^ (length as i32);
    let length4 = length / 4;

    for i in 0..length4 {
        let i4 = i * 4;
        // Bytes are masked with 0xff in Java, so each lands in its own 8 bits (| equals +).
        let mut k: i32 = (data[i4] as i32)
            | ((data[i4 + 1] as i32) << 8)
            | ((data[i4 + 2] as i32) << 16)
            | ((data[i4 + 3] as i32) << 24);
        k = k.wrapping_mul(M);
        k ^= ushr(k, R);
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }

    // Java's switch falls through from case 3 to case 1; the multiply happens once.
    let tail = length & !3;
    let rest = length % 4;
    if rest >= 3 {
        h ^= (data[tail + 2] as i32) << 16;
    }
    if rest >= 2 {
        h ^= (data[tail + 1] as i32) << 8;
    }
    if rest >= 1 {
        h ^= data[tail] as i32;
        h = h.wrapping_mul(M);
    }

    h ^= ushr(h, 13);
    h = h.wrapping_mul(M);
    h ^= ushr(h, 15);
    h
}

/// `Utils.toPositive`: clears the sign bit (not `abs`, which fails for `i32::MIN`).
pub fn to_positive(n: i32) -> i32 {
    n & 0x7fff_ffff
}

/// The partition Kafka's default partitioner picks for a non-null key.
///
/// # Panics
/// If `num_partitions` is not positive: a topic always has at least one partition, so that is
/// a bug in the caller.
pub fn partition_for_key(key: &[u8], num_partitions: i32) -> i32 {
    assert!(
        num_partitions > 0,
        "partition_for_key: num_partitions must be positive, got {num_partitions}"
    );
    to_positive(murmur2(key)) % num_partitions
}

#[cfg(test)]
mod tests {
    use super::*;

    // Kafka UtilsTest.testMurmur2.
    #[test]
    fn kafka_utils_test_vectors() {
        let cases: [(&[u8], i32); 6] = [
            (b"21", -973932308),
            (b"foobar", -790332482),
            (b"a-little-bit-long-string", -985981536),
            (b"a-little-bit-longer-string", -1486304829),
            (
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58897971,
            ),
            (b"abc", 479470107), // given as new byte[] {'a', 'b', 'c'} in UtilsTest
        ];
        for (input, expected) in cases {
            assert_eq!(
                murmur2(input),
                expected,
                "murmur2({:?})",
                String::from_utf8_lossy(input)
            );
        }
    }

    // §4.7: the Connect offsets key example hashes to 3969626902 and lands on partition 4 of 25.
    #[test]
    fn connect_offsets_key_example() {
        let key = br#"["MirrorSourceConnector",{"cluster":"A","partition":0,"topic":"t1"}]"#;
        assert_eq!(murmur2(key) as u32, 3_969_626_902);
        assert_eq!(partition_for_key(key, 25), 4);
    }

    #[test]
    fn to_positive_clears_only_the_sign_bit() {
        assert_eq!(to_positive(i32::MIN), 0);
        assert_eq!(to_positive(-1), i32::MAX);
        assert_eq!(to_positive(5), 5);
        assert_eq!(to_positive(-973932308), -973932308 & 0x7fffffff);
    }

    #[test]
    fn partition_is_in_range_for_every_tail_length() {
        for len in 0..12 {
            let key = vec![0xffu8; len];
            let p = partition_for_key(&key, 7);
            assert!((0..7).contains(&p), "len {len} gave {p}");
        }
    }

    #[test]
    #[should_panic(expected = "num_partitions must be positive")]
    fn zero_partitions_is_a_bug() {
        partition_for_key(b"k", 0);
    }
}
