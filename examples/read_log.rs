//! Reading speed of the access-log reader: parses a log to (time, key) and
//! prints lines, bytes and MB/s (the figure `benches/access_logs/run.sh`
//! puts next to `wc -l` and `zcat` on the same file).
//!
//! ```text
//! cargo run --release --example read_log -- generate combined 2000000 /tmp/access.log
//! cargo run --release --example read_log -- read combined /tmp/access.log [KEY]
//! ```
//!
//! `generate` writes nginx `combined` lines straight from the format's
//! definition (`$remote_addr - $remote_user [$time_local] "$request" $status
//! $body_bytes_sent "$http_referer" "$http_user_agent"`): 50,000 clients,
//! 20,000 requests a second, realistic request lines and user agents.

use ratelab::workload::trace::{LogSpec, Spread, TraceOptions, TraceReader};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

fn generate(n: u64, path: &Path) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let agents = [
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1",
        "curl/8.4.0",
    ];
    for i in 0..n {
        s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let r = s >> 20;
        let sec = i / 20_000;
        let (h, m, sc) = ((sec / 3600) % 24, (sec / 60) % 60, sec % 60);
        let day = 1 + (sec / 86_400) % 28;
        writeln!(
            out,
            "10.{}.{}.{} - - [{:02}/{}/2024:{:02}:{:02}:{:02} +0000] \"GET /api/v1/users/{}/orders?page={} HTTP/1.1\" 200 {} \"https://example.com/shop\" \"{}\"",
            r % 200,
            (r >> 8) % 250,
            (r >> 16) % 250,
            day,
            months[(sec / 2_419_200) as usize % 12],
            h,
            m,
            sc,
            r % 100_000,
            r % 7,
            r % 20_000,
            agents[(r % 3) as usize],
        )?;
    }
    out.flush()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["generate", "combined", n, path] => {
            generate(n.parse()?, Path::new(path))?;
        }
        ["read", format, path, rest @ ..] => {
            let spec = LogSpec {
                format: format.to_string(),
                key: rest.first().map(|k| k.to_string()),
                ..LogSpec::default()
            };
            let opts = TraceOptions {
                spread: Some(Spread::None),
                ..TraceOptions::default()
            };
            let bytes = std::fs::metadata(path)?.len();
            let start = Instant::now();
            let mut r = TraceReader::open_with(Path::new(path), opts, Some(&spec))?;
            let (mut lines, mut sum, mut key_bytes) = (0u64, 0u64, 0usize);
            while let Some(e) = r.next_ref() {
                let (t, k, _) = e?;
                lines += 1;
                sum = sum.wrapping_add(t);
                key_bytes += k.len();
            }
            let secs = start.elapsed().as_secs_f64();
            println!(
                "{lines} lines, {bytes} bytes, {secs:.3} s, {:.0} MB/s (checksum {sum:x}, key bytes {key_bytes})",
                bytes as f64 / secs / 1e6
            );
        }
        _ => {
            eprintln!("usage: read_log generate combined N FILE | read FORMAT FILE [KEY]");
            std::process::exit(2);
        }
    }
    Ok(())
}
