//! Number formatting (and markup escaping) shared by the reports, the
//! sizing search and error messages. Every function here is part of the byte-identical contract of
//! the committed reports: change one and the reports change.

/// The noun for a count of `n`: `one` for 1, `many` otherwise (`1
/// limited key`, `0 limited keys`, `2 limited keys`).
///
/// ```
/// use ratelab::report::fmt::noun;
/// assert_eq!(format!("1 {}", noun(1, "key", "keys")), "1 key");
/// assert_eq!(format!("0 {}", noun(0, "key", "keys")), "0 keys");
/// ```
pub fn noun<'a>(n: u64, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// Whole kibibytes with the unit glued on, rounded down: `65536` → `"64KiB"`
/// (the memory column of the sketch tables).
///
/// ```
/// assert_eq!(ratelab::report::fmt::kib(65_536), "64KiB");
/// assert_eq!(ratelab::report::fmt::kib(1_500), "1KiB");
/// ```
pub fn kib(bytes: u64) -> String {
    format!("{}KiB", bytes / 1024)
}

/// A size for messages, one decimal in the largest binary unit that fits:
/// `"512 B"`, `"1.5 KiB"`, `"1.0 GiB"`.
///
/// ```
/// use ratelab::report::fmt::bytes_human;
/// assert_eq!(bytes_human(512), "512 B");
/// assert_eq!(bytes_human(1536), "1.5 KiB");
/// assert_eq!(bytes_human(1 << 30), "1.0 GiB");
/// ```
pub fn bytes_human(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

/// A percentage (already × 100) with one decimal: `12.345` → `"12.3%"`.
///
/// ```
/// assert_eq!(ratelab::report::fmt::pct_one_decimal(12.345), "12.3%");
/// assert_eq!(ratelab::report::fmt::pct_one_decimal(0.0), "0.0%");
/// ```
pub fn pct_one_decimal(v: f64) -> String {
    format!("{v:.1}%")
}

/// A percentage (already × 100) whose decimals grow as it shrinks, so rare
/// events stay visible: `0` for exactly zero, then five decimals under
/// 0.001 %, four under 0.1 % and two from there on.
///
/// ```
/// use ratelab::report::fmt::pct_scaled;
/// assert_eq!(pct_scaled(0.0), "0");
/// assert_eq!(pct_scaled(0.0004), "0.00040%");
/// assert_eq!(pct_scaled(0.05), "0.0500%");
/// assert_eq!(pct_scaled(12.5), "12.50%");
/// ```
pub fn pct_scaled(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v < 0.001 {
        format!("{v:.5}%")
    } else if v < 0.1 {
        format!("{v:.4}%")
    } else {
        format!("{v:.2}%")
    }
}

/// A CPU time in ns as a rough human duration: `"under 1 s"`, `"about 5 s"`,
/// `"about 3 min"`, `"about 2 h"`, `"about 4 days"`, or `"an unbounded
/// amount"` for a NaN or infinite time.
///
/// ```
/// use ratelab::report::fmt::cpu_human;
/// assert_eq!(cpu_human(5e9), "about 5 s");
/// assert_eq!(cpu_human(f64::INFINITY), "an unbounded amount");
/// ```
pub fn cpu_human(ns: f64) -> String {
    let s = ns / 1e9;
    if !s.is_finite() {
        "an unbounded amount".into()
    } else if s < 1.0 {
        "under 1 s".into()
    } else if s < 120.0 {
        format!("about {s:.0} s")
    } else if s < 7200.0 {
        format!("about {:.0} min", s / 60.0)
    } else if s < 172_800.0 {
        format!("about {:.0} h", s / 3600.0)
    } else {
        format!("about {:.0} days", s / 86_400.0)
    }
}

/// Go's `Duration.String`, except that zero prints as `0`: `10ms`, `1.5s`,
/// `1m0s`, `333.333333ms`, `-7ns`.
///
/// ```
/// use ratelab::report::fmt::go_duration;
/// assert_eq!(go_duration(0), "0");
/// assert_eq!(go_duration(1_500_000_000), "1.5s");
/// assert_eq!(go_duration(60_000_000_000), "1m0s");
/// ```
pub fn go_duration(d: i64) -> String {
    if d == 0 {
        return "0".into();
    }
    let sign = if d < 0 { "-" } else { "" };
    let u = d.unsigned_abs();
    let frac = |v: u64, unit: u64, width: usize| {
        let (i, r) = (v / unit, v % unit);
        if r == 0 {
            i.to_string()
        } else {
            let f = format!("{r:0width$}");
            format!("{i}.{}", f.trim_end_matches('0'))
        }
    };
    let body = if u < 1_000 {
        format!("{u}ns")
    } else if u < 1_000_000 {
        format!("{}µs", frac(u, 1_000, 3))
    } else if u < 1_000_000_000 {
        format!("{}ms", frac(u, 1_000_000, 6))
    } else {
        let h = u / 3_600_000_000_000;
        let m = (u / 60_000_000_000) % 60;
        let s = frac(u % 60_000_000_000, 1_000_000_000, 9);
        if h > 0 {
            format!("{h}h{m}m{s}s")
        } else if m > 0 {
            format!("{m}m{s}s")
        } else {
            format!("{s}s")
        }
    };
    format!("{sign}{body}")
}

/// `s` as markup text: `&`, `<`, `>` and `"` as entities, `'` as `apos`
/// when given (HTML's `&#39;`, XML's `&apos;`; an SVG text leaves it), and
/// with `blank_controls` the control characters XML 1.0 forbids (all but
/// tab, newline and carriage return) as spaces.
///
/// ```
/// use ratelab::report::fmt::escape_markup;
/// assert_eq!(escape_markup("a<b & 'c'", Some("&#39;"), false), "a&lt;b &amp; &#39;c&#39;");
/// assert_eq!(escape_markup("\"x\"\u{1}\n", None, true), "&quot;x&quot; \n");
/// ```
pub fn escape_markup(s: &str, apos: Option<&str>, blank_controls: bool) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str(apos.unwrap_or("'")),
            c if blank_controls && (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => {
                o.push(' ')
            }
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        const MS: i64 = 1_000_000;
        assert_eq!(go_duration(10 * MS), "10ms");
        assert_eq!(go_duration(333_333_333), "333.333333ms");
        assert_eq!(go_duration(1_500), "1.5µs");
        assert_eq!(go_duration(-7), "-7ns");
    }

    #[test]
    fn cpu_times() {
        assert_eq!(cpu_human(0.5e9), "under 1 s");
        assert_eq!(cpu_human(180e9), "about 3 min");
        assert_eq!(cpu_human(3.0 * 3600e9), "about 3 h");
        assert_eq!(cpu_human(3.0 * 86_400e9), "about 3 days");
    }
}
