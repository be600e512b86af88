//! Reading speed of the access-log reader: parses a log to (time, key) and
//! prints lines, bytes and MB/s (the figures `benches/access_logs/run.sh`
//! and `benches/access_logs/formats.sh` put next to `wc -l`, `zcat` and
//! `zstdcat` on the same file).
//!
//! ```text
//! cargo run --release --example read_log -- generate combined 2000000 /tmp/access.log
//! cargo run --release --example read_log -- read combined /tmp/access.log [KEY]
//! cargo run --release --example read_log -- read nginx /tmp/msec.log --log-format '...'
//! cargo run --release --example read_log -- read parquet /tmp/log.parquet --columns time=ts,key=ip
//! cargo run --release --example read_log -- read combined /tmp/access.log ip --shard 1/4
//! ```
//!
//! `--shard I/N` reads as shard I of N does: the lines of other shards'
//! keys only as far as their time and key. `--csv OUT` writes what was
//! read as a CSV trace `t_ns,key` (whole seconds spread as `run --trace`
//! spreads them with its default seed): the log's equivalent CSV, to time
//! the two side by side.
//!
//! `generate FORMAT N FILE` writes N lines (rows) of one of the formats
//! below, each from the layout its software documents: 50,000 clients,
//! 20,000 requests a second, realistic request lines and user agents.
//!
//! * `combined`, `common` — nginx's predefined `combined` (`$remote_addr -
//!   $remote_user [$time_local] "$request" $status $body_bytes_sent
//!   "$http_referer" "$http_user_agent"`) and the Common Log Format (its
//!   first seven fields).
//! * `combined-v6` — `combined` with a quarter of the clients on IPv6
//!   (read it as `combined`).
//! * `nginx-msec` — the nginx `log_format` [`MSEC_FORMAT`] (millisecond
//!   `$msec` times; read with `read nginx FILE --log-format "$FORMAT"`).
//! * `envoy` — Envoy's default access-log format ("Default format string").
//! * `envoy-json` — Envoy JSON access logs (`json_format` with the command
//!   operators' lower-case names: `start_time`, `downstream_remote_address`, ...).
//! * `jsonl` — JSON Lines with `time` (ISO 8601) and `ip` fields.
//! * `alb` — AWS ALB access log entries, every documented field in order.
//! * `cloudfront` — CloudFront standard logs (W3C: `#Version`, `#Fields`
//!   with the 33 documented fields, tab-separated).
//! * `parquet` — a Parquet file (`ts` TIMESTAMP(MILLIS), `ip`, `path`,
//!   `status`, `bytes`), row groups of 1,048,576 rows.

use ratelab::workload::trace::{LogSpec, Spread, TimeUnit, TraceOptions, TraceReader};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// The nginx `log_format` of `generate nginx-msec`.
pub const MSEC_FORMAT: &str =
    "$remote_addr [$msec] \"$request\" $status $body_bytes_sent $request_time \"$http_user_agent\"";

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

const AGENTS: [&str; 3] = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1",
    "curl/8.4.0",
];

/// One request of the generated traffic.
struct Req {
    /// Whole seconds since 2024-01-01T00:00:00Z, and milli- and
    /// microseconds within.
    sec: u64,
    ms: u64,
    us: u64,
    ip: String,
    path: String,
    status: u32,
    bytes: u64,
    agent: &'static str,
    id: u64,
}

/// The `i`-th request (`s`: the generator's state).
fn request(i: u64, s: &mut u64) -> Req {
    *s = s
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    let r = *s >> 20;
    let sec = i / 20_000;
    Req {
        sec,
        ms: (i % 20_000) / 20,
        us: (i % 20_000) * 50,
        ip: format!("10.{}.{}.{}", r % 200, (r >> 8) % 250, (r >> 16) % 250),
        path: format!("/api/v1/users/{}/orders?page={}", r % 100_000, r % 7),
        status: [200, 200, 200, 204, 304, 404][(r % 6) as usize],
        bytes: r % 20_000,
        agent: AGENTS[(r % 3) as usize],
        id: r,
    }
}

/// The civil date and time of `sec` seconds after 2024-01-01 (28-day
/// months are enough for a generated log).
fn civil(sec: u64) -> (u64, u64, u64, u64, u64, u64) {
    let (h, m, s) = ((sec / 3600) % 24, (sec / 60) % 60, sec % 60);
    let day = 1 + (sec / 86_400) % 28;
    let month = 1 + (sec / 2_419_200) % 12;
    (2024, month, day, h, m, s)
}

fn iso(sec: u64, frac: &str) -> String {
    let (y, mo, d, h, mi, s) = civil(sec);
    format!("{y}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}{frac}Z")
}

fn clf(sec: u64) -> String {
    let (y, mo, d, h, mi, s) = civil(sec);
    format!(
        "{d:02}/{}/{y}:{h:02}:{mi:02}:{s:02} +0000",
        MONTHS[mo as usize - 1]
    )
}

/// A quarter of the clients (those whose second octet is a multiple of
/// four) on IPv6 instead, written as nginx writes `$remote_addr`
/// (`inet_ntop`'s form, which `Display` writes too): `10.a.b.c` becomes
/// `2001:db8:a::b:c`; the rest as they are.
fn v6_share(ip: &str) -> String {
    let o: Vec<u16> = ip.split('.').map(|x| x.parse().unwrap_or(0)).collect();
    if o.len() != 4 || !o[2].is_multiple_of(4) {
        return ip.to_string();
    }
    std::net::Ipv6Addr::new(0x2001, 0xdb8, o[1], 0, 0, 0, o[2], o[3]).to_string()
}

/// Epoch seconds of 2024-01-01T00:00:00Z.
const EPOCH_2024: u64 = 1_704_067_200;

fn line(format: &str, q: &Req, out: &mut impl Write) -> std::io::Result<()> {
    match format {
        "combined" | "combined-v6" => writeln!(
            out,
            "{} - - [{}] \"GET {} HTTP/1.1\" {} {} \"https://example.com/shop\" \"{}\"",
            if format == "combined-v6" {
                v6_share(&q.ip)
            } else {
                q.ip.clone()
            },
            clf(q.sec),
            q.path,
            q.status,
            q.bytes,
            q.agent
        ),
        "common" => writeln!(
            out,
            "{} - - [{}] \"GET {} HTTP/1.1\" {} {}",
            q.ip,
            clf(q.sec),
            q.path,
            q.status,
            q.bytes
        ),
        "nginx-msec" => writeln!(
            out,
            "{} [{}.{:03}] \"GET {} HTTP/1.1\" {} {} 0.{:03} \"{}\"",
            q.ip,
            EPOCH_2024 + q.sec,
            q.ms,
            q.path,
            q.status,
            q.bytes,
            q.id % 1000,
            q.agent
        ),
        "envoy" => writeln!(
            out,
            "[{}] \"GET {} HTTP/1.1\" {} - 0 {} {} {} \"{}\" \"{}\" \"{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}\" \"api.example.com\" \"10.1.{}.{}:8080\"",
            iso(q.sec, &format!(".{:03}", q.ms)),
            q.path,
            q.status,
            q.bytes,
            q.id % 300,
            q.id % 250,
            q.ip,
            q.agent,
            q.id as u32,
            q.id % 0xffff,
            q.id % 0xfff,
            (q.id >> 12) % 0xfff,
            q.id % 0xffff_ffff_ffff,
            q.id % 8,
            q.id % 250,
        ),
        "envoy-json" => writeln!(
            out,
            "{{\"start_time\":\"{}\",\"method\":\"GET\",\"path\":\"{}\",\"protocol\":\"HTTP/1.1\",\"response_code\":{},\"response_flags\":\"-\",\"bytes_received\":0,\"bytes_sent\":{},\"duration\":{},\"downstream_remote_address\":\"{}:{}\",\"user_agent\":\"{}\",\"request_id\":\"{:016x}\",\"authority\":\"api.example.com\",\"upstream_host\":\"10.1.{}.{}:8080\"}}",
            iso(q.sec, &format!(".{:03}", q.ms)),
            q.path,
            q.status,
            q.bytes,
            q.id % 300,
            q.ip,
            1024 + q.id % 60_000,
            q.agent,
            q.id,
            q.id % 8,
            q.id % 250,
        ),
        "jsonl" => writeln!(
            out,
            "{{\"time\":\"{}\",\"ip\":\"{}\",\"method\":\"GET\",\"path\":\"{}\",\"status\":{},\"bytes\":{}}}",
            iso(q.sec, &format!(".{:03}", q.ms)),
            q.ip,
            q.path,
            q.status,
            q.bytes,
        ),
        "alb" => writeln!(
            out,
            "https {} app/my-loadbalancer/50dc6c495c0c9188 {}:{} 10.0.0.1:80 0.000 0.0{:02} 0.000 {} {} 412 {} \"GET https://www.example.com:443{} HTTP/1.1\" \"{}\" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 \"Root=1-58337262-{:024x}\" \"www.example.com\" \"arn:aws:acm:us-east-2:123456789012:certificate/12345678-1234-1234-1234-123456789012\" 0 {} \"forward\" \"-\" \"-\" \"10.0.0.1:80\" \"{}\" \"-\" \"-\" TID_{:032x}",
            iso(q.sec, &format!(".{:06}", q.us)),
            q.ip,
            1024 + q.id % 60_000,
            q.id % 100,
            q.status,
            q.status,
            q.bytes,
            q.path,
            q.agent,
            q.id,
            iso(q.sec, &format!(".{:03}000", q.ms)),
            q.status,
            q.id,
        ),
        "cloudfront" => {
            let (y, mo, d, h, mi, s) = civil(q.sec);
            let (stem, query) = q.path.split_once('?').unwrap_or((&q.path, "-"));
            writeln!(
                out,
                "{y}-{mo:02}-{d:02}\t{h:02}:{mi:02}:{s:02}\tLAX1-C1\t{}\t{}\tGET\td111111abcdef8.cloudfront.net\t{stem}\t{}\thttps://example.com/shop\t{}\t{query}\t-\tHit\t{:x}==\td111111abcdef8.cloudfront.net\thttps\t412\t0.{:03}\t-\tTLSv1.3\tTLS_AES_128_GCM_SHA256\tHit\tHTTP/2.0\t-\t-\t{}\t0.{:03}\tHit\tapplication/json\t{}\t-\t-",
                q.bytes,
                q.ip,
                q.status,
                q.agent.replace(' ', "%20"),
                q.id,
                q.id % 1000,
                1024 + q.id % 60_000,
                q.id % 1000,
                q.bytes,
            )
        }
        other => Err(std::io::Error::other(format!("unknown format {other}"))),
    }
}

/// CloudFront's header lines.
const CLOUDFRONT_HEADER: &str = "#Version: 1.0\n#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id x-host-header cs-protocol cs-bytes time-taken x-forwarded-for ssl-protocol ssl-cipher x-edge-response-result-type cs-protocol-version fle-status fle-encrypted-fields c-port time-to-first-byte x-edge-detailed-result-type sc-content-type sc-content-len sc-range-start sc-range-end\n";

fn generate(format: &str, n: u64, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    if format == "parquet" {
        return generate_parquet(n, path);
    }
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    if format == "cloudfront" {
        out.write_all(CLOUDFRONT_HEADER.as_bytes())?;
    }
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..n {
        let q = request(i, &mut s);
        line(format, &q, &mut out)?;
    }
    out.flush()?;
    Ok(())
}

/// A Parquet log: `ts` TIMESTAMP(MILLIS), `ip`, `path` (UTF-8), `status`
/// (INT32), `bytes` (INT64), in row groups of 2^20 rows.
fn generate_parquet(n: u64, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    use parquet::data_type::{ByteArray, ByteArrayType, Int32Type, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    use std::sync::Arc;
    let schema = Arc::new(parse_message_type(
        "message log { REQUIRED INT64 ts (TIMESTAMP(MILLIS,true)); REQUIRED BINARY ip (UTF8); REQUIRED BINARY path (UTF8); REQUIRED INT32 status; REQUIRED INT64 bytes; }",
    )?);
    let file = std::fs::File::create(path)?;
    let mut w = SerializedFileWriter::new(file, schema, Arc::new(WriterProperties::default()))?;
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let mut i = 0;
    while i < n {
        let rows = (n - i).min(1 << 20);
        let (mut ts, mut ip, mut paths, mut status, mut bytes) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for j in i..i + rows {
            let q = request(j, &mut s);
            ts.push(((EPOCH_2024 + q.sec) * 1000 + q.ms) as i64);
            ip.push(ByteArray::from(q.ip.as_str()));
            paths.push(ByteArray::from(q.path.as_str()));
            status.push(q.status as i32);
            bytes.push(q.bytes as i64);
        }
        let mut rg = w.next_row_group()?;
        let mut col = 0;
        while let Some(mut c) = rg.next_column()? {
            match col {
                0 => {
                    c.typed::<Int64Type>().write_batch(&ts, None, None)?;
                }
                1 => {
                    c.typed::<ByteArrayType>().write_batch(&ip, None, None)?;
                }
                2 => {
                    c.typed::<ByteArrayType>().write_batch(&paths, None, None)?;
                }
                3 => {
                    c.typed::<Int32Type>().write_batch(&status, None, None)?;
                }
                _ => {
                    c.typed::<Int64Type>().write_batch(&bytes, None, None)?;
                }
            }
            c.close()?;
            col += 1;
        }
        rg.close()?;
        i += rows;
    }
    w.close()?;
    Ok(())
}

fn read(format: &str, path: &str, rest: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let mut spec = LogSpec {
        format: format.to_string(),
        ..LogSpec::default()
    };
    let mut shard = None;
    let mut csv: Option<String> = None;
    let mut i = 0;
    while i < rest.len() {
        match (rest[i].as_str(), rest.get(i + 1)) {
            ("--log-format", Some(f)) => spec.log_format = Some(f.clone()),
            ("--time-unit", Some(u)) => spec.unit = u.parse::<TimeUnit>()?,
            ("--shard", Some(sh)) => shard = Some(ratelab::lab::shard::parse_shard(sh)?),
            ("--csv", Some(out)) => csv = Some(out.clone()),
            ("--columns", Some(c)) => {
                for kv in c.split(',') {
                    match kv.split_once('=') {
                        Some(("time", v)) => spec.time = Some(v.to_string()),
                        Some(("key", v)) => spec.key = Some(v.to_string()),
                        _ => {
                            return Err(format!("--columns {c}: expected time=NAME,key=NAME").into())
                        }
                    }
                }
            }
            (key, _) if i == 0 && !key.starts_with("--") => {
                spec.key = Some(key.to_string());
                i += 1;
                continue;
            }
            (other, _) => return Err(format!("unknown option {other}").into()),
        }
        i += 2;
    }
    let opts = match csv {
        // The lab's spread of whole seconds for seed 1 (`run --trace`'s
        // default seed; finer times kept as written): the CSV is the log's
        // equivalent, line for line.
        Some(_) => TraceOptions {
            spread: None,
            spread_seed: ratelab::workload::trace::format::spread_seed(1),
            ..TraceOptions::default()
        },
        None => TraceOptions {
            spread: Some(Spread::None),
            ..TraceOptions::default()
        },
    };
    let mut out = match &csv {
        Some(p) => {
            let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(p)?);
            writeln!(w, "t_ns,key")?;
            Some(w)
        }
        None => None,
    };
    let bytes = std::fs::metadata(path)?.len();
    let start = Instant::now();
    let mut r = TraceReader::open_with(Path::new(path), opts, Some(&spec))?;
    if let Some(s) = shard {
        // A shard's reading: other shards' lines only as far as their
        // time and key.
        r.set_key_filter(std::sync::Arc::new(move |k: &str| s.owns_key(k)), false);
    }
    let (mut lines, mut sum, mut key_bytes) = (0u64, 0u64, 0usize);
    while let Some(e) = r.next_key() {
        let (t, k, _) = e?;
        if let (Some(w), Some(k)) = (out.as_mut(), k) {
            writeln!(w, "{t},{k}")?;
        }
        lines += 1;
        sum = sum.wrapping_add(t);
        key_bytes += k.map_or(0, str::len);
    }
    if let Some(mut w) = out {
        w.flush()?;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{lines} lines, {bytes} bytes, {secs:.3} s, {:.0} MB/s (checksum {sum:x}, key bytes {key_bytes})",
        bytes as f64 / secs / 1e6
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["generate", format, n, path] => generate(format, n.parse()?, Path::new(path))?,
        ["read", format, path, ..] => read(format, path, &args[3..])?,
        _ => {
            eprintln!(
                "usage: read_log generate FORMAT N FILE | read FORMAT FILE [KEY] [--log-format F] [--columns time=T,key=K] [--time-unit U] [--shard I/N] [--csv OUT]"
            );
            std::process::exit(2);
        }
    }
    Ok(())
}
