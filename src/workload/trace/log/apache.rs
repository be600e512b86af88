//! Apache httpd `LogFormat` strings (mod_log_config, "Custom Log
//! Formats", <https://httpd.apache.org/docs/2.4/mod/mod_log_config.html>):
//! `%` directives and literal text, read with the same line template as
//! nginx's `log_format`.
//!
//! Each directive is a field under an nginx-like name, so keys and
//! options read as they do for nginx: `%h` is `remote_host`, `%a`
//! `remote_addr`, `%t` `time_local` (the Common Log Format time, whole
//! seconds, when the request was received), `%{msec}t` / `%{usec}t`
//! `time_msec` / `time_usec` (milliseconds / microseconds since the
//! epoch), `%r` `request`, `%>s` `status`, `%b` `body_bytes_sent`, `%O`
//! `bytes_sent`, `%D` `request_time_us`, `%{X-Api-Key}i` `http_x_api_key`.
//! A directive may also be named as written (`--key '%{X-Forwarded-For}i'`).
//! Status conditions (`%400,501{User-agent}i`) and the `<`/`>` and
//! `begin:`/`end:` modifiers are read as the directive they modify.
//! Apache escapes `"` and `\` in `%r`, `%i` and `%o` with a backslash,
//! which the template skips when it looks for a closing quote.

use super::template::{Seg, Template};
use super::ParseError;
use super::{Fields, LogFormat, TimeKind};

/// A line format given by an Apache `LogFormat` string.
pub struct Apache {
    t: Template,
}

/// The field name of directive `letter` with its `{arg}` (None: none) and
/// `>`/`<` modifier; `Err` for a letter mod_log_config does not define.
fn name_of(letter: char, arg: Option<&str>, final_status: bool) -> Result<String, ParseError> {
    let header =
        |prefix: &str, h: &str| format!("{prefix}{}", h.to_ascii_lowercase().replace('-', "_"));
    Ok(match (letter, arg) {
        ('a', Some("c")) => "peer_addr".into(),
        ('a', _) => "remote_addr".into(),
        ('A', _) => "server_addr".into(),
        ('B', _) => "bytes".into(),
        ('b', _) => "body_bytes_sent".into(),
        ('C', Some(c)) => header("cookie_", c),
        ('D', _) => "request_time_us".into(),
        ('e', Some(e)) => header("env_", e),
        ('f', _) => "request_filename".into(),
        ('h', Some("c")) => "peer_host".into(),
        ('h', _) => "remote_host".into(),
        ('H', _) => "server_protocol".into(),
        ('i', Some(h)) => header("http_", h),
        ('I', _) => "bytes_received".into(),
        ('k', _) => "keepalive_requests".into(),
        ('l', _) => "remote_logname".into(),
        ('L', _) => "log_id".into(),
        ('m', _) => "request_method".into(),
        ('n', Some(n)) => header("note_", n),
        ('o', Some(h)) => header("sent_http_", h),
        ('O', _) => "bytes_sent".into(),
        ('p', None) => "server_port".into(),
        ('p', Some(p)) => header("port_", p),
        ('P', None) => "pid".into(),
        ('P', Some(p)) => header("pid_", p),
        ('q', _) => "query_string".into(),
        ('r', _) => "request".into(),
        ('R', _) => "handler".into(),
        ('s', _) if final_status => "status".into(),
        ('s', _) => "original_status".into(),
        ('S', _) => "bytes_transferred".into(),
        ('t', None) => "time_local".into(),
        ('t', Some(f)) => {
            let f = f
                .strip_prefix("begin:")
                .or_else(|| f.strip_prefix("end:"))
                .unwrap_or(f);
            match f {
                "sec" | "msec" | "usec" | "msec_frac" | "usec_frac" => format!("time_{f}"),
                _ => format!("time({f})"),
            }
        }
        ('T', None) => "request_time".into(),
        ('T', Some(u)) => format!("request_time_{u}"),
        ('u', _) => "remote_user".into(),
        ('U', _) => "uri".into(),
        ('v', _) => "server_name".into(),
        ('V', _) => "host".into(),
        ('X', _) => "connection_status".into(),
        // `^ti` and `^to`, as `directives` passes them.
        ('J', Some(t)) => header("trailer_", t),
        ('j', Some(t)) => header("sent_trailer_", t),
        (c, Some(a)) if matches!(c, 'C' | 'e' | 'i' | 'n' | 'o') => {
            return Err(ParseError::Option(format!(
                "log format: %{{{a}}}{c}: the name in braces is empty"
            )))
        }
        (c, None) if matches!(c, 'C' | 'e' | 'i' | 'n' | 'o' | 'J' | 'j') => {
            return Err(ParseError::Option(format!(
                "log format: %{c} needs a name in braces (%{{Name}}{c})"
            )))
        }
        (c, _) => {
            return Err(ParseError::Option(format!(
                "log format: %{c} is not a mod_log_config directive"
            )))
        }
    })
}

/// A piece of a `LogFormat` string.
enum Piece {
    /// Literal text.
    Lit(String),
    /// A directive: its field name and the directive as written.
    Dir(String, String),
}

/// Splits a `LogFormat` string into literal text and directives.
fn directives(format: &str) -> Result<Vec<Piece>, ParseError> {
    let mut out = Vec::new();
    let mut lit = String::new();
    let mut it = format.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if c != '%' {
            lit.push(c);
            continue;
        }
        if it.peek().map(|p| p.1) == Some('%') {
            it.next();
            lit.push('%');
            continue;
        }
        // %[!][codes][<>]{arg}letter — modifiers in any order as Apache
        // accepts them (parse_log_item in mod_log_config.c).
        let mut arg = None;
        let mut final_status = true;
        let letter = loop {
            let Some((j, d)) = it.next() else {
                return Err(ParseError::Option(format!(
                    "log format: the directive at byte {} is never finished",
                    i + 1
                )));
            };
            match d {
                '!' | ',' | '0'..='9' => {}
                '<' => final_status = false,
                '>' => final_status = true,
                '{' => {
                    let close = format[j..].find('}').ok_or_else(|| {
                        ParseError::Option(format!(
                            "log format: '{{' at byte {} is never closed",
                            j + 1
                        ))
                    })?;
                    arg = Some(&format[j + 1..j + close]);
                    while it.peek().is_some_and(|p| p.0 <= j + close) {
                        it.next();
                    }
                }
                d => break (d, j),
            }
        };
        let (letter, at) = letter;
        let mut end = at + letter.len_utf8();
        // `%{Name}^ti` / `%{Name}^to`: a request or response trailer, the
        // only directives of three letters.
        let letter = if letter == '^' {
            let two: String = it.by_ref().take(2).map(|(_, c)| c).collect();
            end += two.len();
            match two.as_str() {
                "ti" => 'J',
                "to" => 'j',
                _ => {
                    return Err(ParseError::Option(format!(
                        "log format: %^{two} is not a mod_log_config directive (%{{Name}}^ti or %{{Name}}^to)"
                    )))
                }
            }
        } else {
            letter
        };
        let written = &format[i..end];
        if !lit.is_empty() {
            out.push(Piece::Lit(std::mem::take(&mut lit)));
        }
        let name = name_of(letter, arg.map(str::trim), final_status)?;
        if letter == 't' && arg.is_none() {
            // `%t` writes its brackets ("in the format
            // [18/Sep/2011:19:18:28 -0400]"): literal text around the
            // field, so the space inside the time is no field's end.
            out.push(Piece::Lit("[".into()));
            out.push(Piece::Dir(name, written.to_string()));
            lit.push(']');
            continue;
        }
        out.push(Piece::Dir(name, written.to_string()));
    }
    if !lit.is_empty() {
        out.push(Piece::Lit(lit));
    }
    Ok(out)
}

impl Apache {
    /// Compiles a `LogFormat` string (the string only, as in
    /// `LogFormat "%h %l %u %t \"%r\" %>s %b" common`, without the
    /// config file's quoting).
    ///
    /// # Examples
    /// ```
    /// use ratelab::workload::trace::log::{apache::Apache, LogFormat};
    /// let mut f = Apache::new(r#"%h %l %u %t "%r" %>s %b "%{X-Forwarded-For}i""#).unwrap();
    /// let i = f.field("http_x_forwarded_for").unwrap();
    /// assert_eq!(f.field("%{X-Forwarded-For}i"), Some(i));
    /// let line = r#"192.0.2.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 - "203.0.113.9""#;
    /// assert_eq!(f.split(line).unwrap().get(i), "203.0.113.9");
    /// ```
    pub fn new(format: &str) -> Result<Apache, ParseError> {
        let (mut segs, mut names) = (Vec::new(), Vec::<String>::new());
        for d in directives(format)? {
            match d {
                Piece::Lit(lit) => segs.push(Seg::Lit(lit)),
                Piece::Dir(name, written) => {
                    if names.contains(&name) {
                        return Err(ParseError::Option(format!(
                            "log format: {written} ({name}) appears twice"
                        )));
                    }
                    segs.push(Seg::Field(names.len()));
                    names.push(name);
                }
            }
        }
        let t = Template::new(segs, names).map_err(|m| m.within("log format"))?;
        Ok(Apache { t })
    }
}

impl LogFormat for Apache {
    fn name(&self) -> &str {
        "apache"
    }
    fn field(&mut self, name: &str) -> Option<usize> {
        let name = name.trim();
        if let Some(i) = self.t.index(name) {
            return Some(i);
        }
        // A directive as written: `%{X-Forwarded-For}i`, `%>s`.
        let pieces = directives(name).ok()?;
        let mut dirs = pieces.iter().filter_map(|p| match p {
            Piece::Dir(n, _) => Some(n),
            Piece::Lit(_) => None,
        });
        match (dirs.next(), dirs.next()) {
            (Some(n), None) => self.t.index(n),
            _ => None,
        }
    }
    super::template::split_by_template!(t);
    fn time_kind(&self, field: usize) -> Option<TimeKind> {
        match self.t.names[field].as_str() {
            "time_local" => Some(TimeKind::Clf),
            "time_msec" => Some(TimeKind::Decimal(1_000_000)),
            "time_usec" => Some(TimeKind::Decimal(1_000)),
            _ => None,
        }
    }
    fn default_field(&self, role: &str) -> Option<String> {
        let candidates: &[&str] = match role {
            "time" => &["time_local", "time_msec", "time_usec"],
            "ip" => &[
                "remote_addr",
                "remote_host",
                "http_x_forwarded_for",
                "peer_addr",
            ],
            "route" => &["request", "uri"],
            "bytes" => &["bytes_sent", "body_bytes_sent", "bytes"],
            _ => &[],
        };
        candidates
            .iter()
            .find(|c| self.t.index(c).is_some())
            .map(|c| c.to_string())
    }
    fn header_field(&self, header: &str) -> Option<String> {
        Some(format!("http_{}", header.replace('-', "_")))
    }
}
