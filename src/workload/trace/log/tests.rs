use super::*;

fn parser(format: &str, key: Option<&str>) -> LogParser {
    LogParser::new(&LogSpec {
        format: format.into(),
        key: key.map(str::to_string),
        ..LogSpec::default()
    })
    .unwrap()
}

/// (time, key, weight) of a data line.
fn event(p: &mut LogParser, line: &str) -> Result<(Nanos, String, u64), ParseError> {
    let mut held = String::new();
    match p.parse(line, &mut held)? {
        Parsed::Header => Err(ParseError::Line("header".into())),
        Parsed::Event(t, Some(r), w) => Ok((t, line[r].to_string(), w)),
        Parsed::Event(t, None, w) => Ok((t, held, w)),
        Parsed::Elsewhere(..) => Err(ParseError::Line("elsewhere".into())),
    }
}

const COMBINED_LINE: &str = r#"192.0.2.10 - alice [10/Oct/2000:13:55:36 -0700] "GET /users/42/cart?x=1 HTTP/1.1" 200 2326 "http://example.com/" "Mozilla/5.0 (X11) \"quoted\"""#;

#[test]
fn combined_keys_of_every_kind() {
    let t = 971_211_336_000_000_000;
    for (key, want) in [
        ("ip", "192.0.2.10"),
        ("remote_addr", "192.0.2.10"),
        ("ip/24", "192.0.2.0/24"),
        ("route", "/users/:id/cart"),
        ("ip+route", "192.0.2.10 /users/:id/cart"),
        ("remote_user", "alice"),
        ("header:user-agent", "Mozilla/5.0 (X11) \\\"quoted\\\""),
    ] {
        let mut p = parser("combined", Some(key));
        assert_eq!(
            event(&mut p, COMBINED_LINE),
            Ok((t, want.to_string(), 1)),
            "{key}"
        );
    }
}

#[test]
fn weights_from_a_field() {
    let mut p = LogParser::new(&LogSpec {
        format: "combined".into(),
        weight: Some("bytes".into()),
        ..LogSpec::default()
    })
    .unwrap();
    assert_eq!(event(&mut p, COMBINED_LINE).unwrap().2, 2326);
    let zero = COMBINED_LINE.replace(" 2326 ", " 0 ");
    assert_eq!(event(&mut p, &zero).unwrap().2, 1);
    let bad = COMBINED_LINE.replace(" 2326 ", " lots ");
    assert!(event(&mut p, &bad)
        .unwrap_err()
        .to_string()
        .contains("body_bytes_sent"));
}

#[test]
fn malformed_lines_name_the_field() {
    let mut p = parser("combined", None);
    for (line, want) in [
        (COMBINED_LINE.replace("Oct", "Okt"), "field time_local"),
        (
            COMBINED_LINE.replace(" - alice [", " - alice "),
            "field remote_user: no \" [\"",
        ),
        (COMBINED_LINE[..60].to_string(), "field request"),
        (format!("{COMBINED_LINE} extra"), "after the last field"),
    ] {
        let e = event(&mut p, &line).unwrap_err().to_string();
        assert!(e.contains(want), "{line}: {e}");
    }
    let mut ip = parser("combined", Some("ip/24"));
    let e = event(&mut ip, &COMBINED_LINE.replace("192.0.2.10", "localhost"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("remote_addr") && e.contains("localhost"), "{e}");
}

#[test]
fn custom_nginx_formats_read_iso_and_msec_times() {
    let spec = |f: &str, key: &str| LogSpec {
        format: "nginx".into(),
        log_format: Some(f.into()),
        key: Some(key.into()),
        ..LogSpec::default()
    };
    let mut p = LogParser::new(&spec(
        "$msec $http_x_api_key $request_uri",
        "header:x-api-key",
    ))
    .unwrap();
    assert_eq!(
        event(&mut p, "1555072412.123 k-1 /a"),
        Ok((1_555_072_412_123_000_000, "k-1".into(), 1))
    );
    assert_eq!(p.time_field(), Some(("msec", false)));
    let mut p =
        LogParser::new(&spec("${time_iso8601}|$remote_addr|$request_uri", "route")).unwrap();
    assert_eq!(
        event(&mut p, "2000-10-10T13:55:36-07:00|::1|/u/9"),
        Ok((971_211_336_000_000_000, "/u/:id".into(), 1))
    );
    assert_eq!(p.time_field(), Some(("time_iso8601", true)));
    for (f, key, want) in [
        ("$remote_addr$status [$time_local]", "ip", "adjacent"),
        (
            "$remote_addr [$time_local]",
            "header:x-api-key",
            "http_x_api_key",
        ),
        ("$remote_addr $status", "ip", "no time field"),
        ("$remote_addr [$time_local] $", "ip", "variable name"),
    ] {
        let e = LogParser::new(&spec(f, key)).err().unwrap().to_string();
        assert!(e.contains(want), "{f}: {e}");
    }
    let e = LogParser::new(&LogSpec {
        format: "nginx".into(),
        ..LogSpec::default()
    })
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("log_format"), "{e}");
}

#[test]
fn envoy_default_format() {
    let line = r#"[2016-04-15T20:17:00.310Z] "POST /api/v1/locations/12 HTTP/2" 204 - 154 0 226 100 "10.0.35.28" "nsq2http" "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2" "locations" "tcp://10.0.2.1:80""#;
    let mut p = parser("envoy", Some("ip+route"));
    assert_eq!(
        event(&mut p, line),
        Ok((
            1_460_751_420_310_000_000,
            "10.0.35.28 /api/v1/locations/:id".into(),
            1
        ))
    );
    let mut p = parser("envoy", Some("header:x-request-id"));
    assert_eq!(
        event(&mut p, line).unwrap().1,
        "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2"
    );
}

/// Envoy writes a header's value raw in a format string (the header
/// formatter returns `entry->value().getStringView()`, only cut to a
/// length limit: source/common/formatter/http_specific_formatter.cc,
/// `HeaderFormatter::format`; docs/root/configuration/observability/
/// access_log/usage.rst, "Format Strings": no escaping is described). A
/// user agent holding quotes, last in the line, still reads: the last
/// field ends where the format's closing literal closes the line.
#[test]
fn envoy_raw_quotes_in_the_last_field_read() {
    let spec = LogSpec {
        format: "envoy".into(),
        log_format: Some(
            r#"[%START_TIME%] %DOWNSTREAM_REMOTE_ADDRESS% "%REQUEST_HEADER(X-FORWARDED-FOR)%" "%REQUEST_HEADER(USER-AGENT)%"\n"#
                .into(),
        ),
        key: Some("ip+header:user-agent".into()),
        ..LogSpec::default()
    };
    let mut p = LogParser::new(&spec).unwrap();
    let line = r#"[2016-04-15T20:17:00.310Z] [2001:db8::5]:443 "203.0.113.9, 2001:db8::5" "weird "quoted" agent""#;
    assert_eq!(
        event(&mut p, line).unwrap(),
        (
            1_460_751_420_310_000_000,
            "2001:db8::5 weird \"quoted\" agent".into(),
            1
        )
    );
    // A line that does not end with the closing literal is still an error
    // naming the field.
    let e = event(&mut p, &line[..line.len() - 1])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("after the last field") || e.contains("REQUEST_HEADER(USER-AGENT)"),
        "{e}"
    );
    // nginx escapes a quote (`\x22`, ngx_http_log_escape): a log with a
    // quoted field more than its format names (nginx's `main` format read
    // as `combined`) is still an error, not a user agent holding the rest.
    let main = format!("{COMBINED_LINE} \"203.0.113.9\"");
    let e = event(&mut parser("combined", None), &main)
        .unwrap_err()
        .to_string();
    assert!(e.contains("after the last field"), "{e}");
}

/// Envoy's `typed_json_format` (docs/root/configuration/observability/
/// access_log/usage.rst, "Format Dictionaries" and "Command Operators":
/// numbers typed, an unset value `null`) with keys of the user's choosing:
/// the client is read from the `X-Forwarded-For` field by the trace's
/// rule whatever its key calls it (`xff`, `x_forwarded_for`).
#[test]
fn envoy_typed_json_with_its_own_keys() {
    let line = |k: &str| {
        format!(
            r#"{{"@timestamp":"2016-04-15T20:17:00.310Z","status":429,"duration":3,"upstream_service_time":null,"{k}":"unknown, 203.0.113.9, 2001:db8::5"}}"#
        )
    };
    for name in ["xff", "x_forwarded_for", "xForwardedFor"] {
        for (xff, want) in [
            (Xff::Last, "2001:db8::5"),
            (Xff::TrustedHops(1), "203.0.113.9"),
            (Xff::TrustedHops(2), "2001:db8::5"),
        ] {
            let mut p = LogParser::new(&LogSpec {
                format: "envoy-json".into(),
                time: Some("@timestamp".into()),
                key: Some(format!("{name}/32/128")),
                xff: Some(xff),
                ..LogSpec::default()
            })
            .unwrap();
            assert_eq!(
                event(&mut p, &line(name)).unwrap(),
                (1_460_751_420_310_000_000, want.to_string(), 1),
                "{name} {xff:?}"
            );
        }
    }
    // The default key reads downstream_remote_address; a json_format
    // without it is an error saying the field is missing.
    let mut p = LogParser::new(&LogSpec {
        format: "envoy-json".into(),
        time: Some("@timestamp".into()),
        ..LogSpec::default()
    })
    .unwrap();
    let e = event(&mut p, &line("xff")).unwrap_err().to_string();
    assert!(
        e.contains("downstream_remote_address") && e.contains("missing"),
        "{e}"
    );
}

/// The two example entries of AWS's "Access logs for your Network Load
/// Balancer" (<https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-access-logs.html>,
/// "Example log entries"): space-delimited, `time` the connection's end
/// and `tls_connection_creation_time` its start, whole seconds without an
/// offset (UTC; epoch values from `date -u -d ... +%s`).
#[test]
fn nlb_reads_the_documented_entries() {
    let no_alpn = "tls 2.0 2018-12-20T02:59:40 net/my-network-loadbalancer/c6e77e28c25b2234 g3d4b5e8bb8464cd 72.21.218.154:51341 172.100.100.185:443 5 2 98 246 - arn:aws:acm:us-east-2:671290407336:certificate/2a108f19-aded-46b0-8493-c63eb1ef4a99 - ECDHE-RSA-AES128-SHA tlsv12 - my-network-loadbalancer-c6e77e28c25b2234.elb.us-east-2.amazonaws.com - - - 2018-12-20T02:59:30";
    let alpn = r#"tls 2.0 2020-04-01T08:51:42 net/my-network-loadbalancer/c6e77e28c25b2234 g3d4b5e8bb8464cd 72.21.218.154:51341 172.100.100.185:443 5 2 98 246 - arn:aws:acm:us-east-2:671290407336:certificate/2a108f19-aded-46b0-8493-c63eb1ef4a99 - ECDHE-RSA-AES128-SHA tlsv12 - my-network-loadbalancer-c6e77e28c25b2234.elb.us-east-2.amazonaws.com h2 h2 "h2","http/1.1" 2020-04-01T08:51:20"#;
    let mut p = parser("nlb", None);
    assert_eq!(
        event(&mut p, no_alpn).unwrap(),
        (1_545_274_780_000_000_000, "72.21.218.154".into(), 1)
    );
    assert_eq!(
        event(&mut p, alpn).unwrap(),
        (1_585_731_102_000_000_000, "72.21.218.154".into(), 1)
    );
    // The start of the connection, past the quoted ALPN list (one field:
    // NLB quotes nothing); AWS's own spelling of the address field.
    let mut p = LogParser::new(&LogSpec {
        format: "nlb".into(),
        time: Some("tls_connection_creation_time".into()),
        key: Some("client_port/24/64".into()),
        weight: Some("bytes".into()),
        ..LogSpec::default()
    })
    .unwrap();
    assert_eq!(
        event(&mut p, alpn).unwrap(),
        (1_585_731_080_000_000_000, "72.21.218.0/24".into(), 246)
    );
    assert_eq!(event(&mut p, no_alpn).unwrap().0, 1_545_274_770_000_000_000);
    // An IPv6 client is written without brackets, as ALB writes it.
    let v6 = no_alpn.replace("72.21.218.154:51341", "2001:db8::5:51341");
    assert_eq!(
        event(&mut parser("nlb", None), &v6).unwrap().1,
        "2001:db8::5"
    );
    // Its times are whole seconds: a fraction would be spread twice.
    let frac = no_alpn.replace("02:59:40 ", "02:59:40.5 ");
    let e = event(&mut parser("nlb", None), &frac)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("field time") && e.contains("whole seconds"),
        "{e}"
    );
    let short = event(
        &mut parser("nlb", None),
        "tls 2.0 2018-12-20T02:59:40 net/x",
    )
    .unwrap_err();
    assert!(short.to_string().contains("at least 11"), "{short}");
}

/// `%START_TIME(%s.%3f)%` and its kin (Envoy's usage.rst, `%START_TIME%`:
/// `%s` the seconds since the Epoch, `%[1-9]f` fraction digits, `%f`
/// nine; the examples `%START_TIME(%s.%3f)%`, `%s.%6f`, `%s.%9f`) are
/// decimal epoch seconds; other custom time formats are refused naming
/// the forms read.
#[test]
fn envoy_epoch_start_times() {
    for (op, text) in [
        ("%s.%3f", "1460751420.310"),
        ("%s.%6f", "1460751420.310000"),
        ("%s.%9f", "1460751420.310000000"),
        ("%s.%f", "1460751420.310000000"),
    ] {
        let mut p = LogParser::new(&LogSpec {
            format: "envoy".into(),
            log_format: Some(format!(
                "%START_TIME({op})% %DOWNSTREAM_REMOTE_ADDRESS% %RESPONSE_CODE%"
            )),
            ..LogSpec::default()
        })
        .unwrap();
        assert_eq!(
            event(&mut p, &format!("{text} [2001:db8::5]:443 200")).unwrap(),
            (1_460_751_420_310_000_000, "2001:db8::5".into(), 1),
            "{op}"
        );
    }
    for op in ["%s", "%Y/%m/%dT%H:%M:%S%z", "%s.%10f"] {
        let e = LogParser::new(&LogSpec {
            format: "envoy".into(),
            log_format: Some(format!("%START_TIME({op})% %DOWNSTREAM_REMOTE_ADDRESS%")),
            ..LogSpec::default()
        })
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("%s.%3f"), "{op}: {e}");
    }
}

/// nginx on a dual-stack socket logs an IPv4 client as an IPv4-mapped
/// IPv6 address (`ngx_inet6_ntop`, src/core/ngx_inet.c: `::ffff:` then
/// the dotted quad): it is that IPv4 client, masked as IPv4.
#[test]
fn ipv4_mapped_addresses_are_their_ipv4_client() {
    let line = |a: &str| COMBINED_LINE.replacen("192.0.2.10", a, 1);
    let key = |k: &str, a: &str| event(&mut parser("combined", Some(k)), &line(a)).unwrap().1;
    assert_eq!(key("ip", "::ffff:192.0.2.10"), "192.0.2.10");
    assert_eq!(key("ip", "::ffff:192.0.2.10"), key("ip", "192.0.2.10"));
    assert_eq!(key("ip/24/64", "::ffff:192.0.2.10"), "192.0.2.0/24");
    assert_eq!(key("ip/24/64", "::ffff:198.51.100.7"), "198.51.100.0/24");
    // Other IPv6 addresses are left as they are.
    assert_eq!(key("ip/24/64", "2001:db8:1:2::5"), "2001:db8:1:2::/64");
    assert_eq!(key("ip", "::1"), "::1");
}

/// Apache `LogFormat` strings, from mod_log_config's "Custom Log Formats"
/// and its "Common Log Format" / "Combined Log Format" nicknames
/// (<https://httpd.apache.org/docs/2.4/mod/mod_log_config.html>; the
/// example lines of <https://httpd.apache.org/docs/2.4/logs.html>).
#[test]
fn apache_logformat_strings() {
    let spec = |f: &str, key: Option<&str>| LogSpec {
        format: "apache".into(),
        log_format: Some(f.into()),
        key: key.map(str::to_string),
        ..LogSpec::default()
    };
    let combined = r#"%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-agent}i""#;
    let line = r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 "http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)""#;
    // The same events as the built-in combined format.
    let mut a = LogParser::new(&LogSpec {
        time: Some("%t".into()),
        ..spec(combined, Some("ip+route"))
    })
    .unwrap();
    let mut b = parser("combined", Some("ip+route"));
    assert_eq!(event(&mut a, line), event(&mut b, line));
    assert_eq!(event(&mut a, line).unwrap().0, 971_211_336_000_000_000);
    // A header by its Apache directive, by its name, or as header:NAME;
    // Apache's backslash-escaped quote inside it.
    let ua =
        r#"127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 - "-" "say \"hi\"""#;
    for k in ["%{User-agent}i", "http_user_agent", "header:user-agent"] {
        let mut p = LogParser::new(&spec(combined, Some(k))).unwrap();
        assert_eq!(event(&mut p, ua).unwrap().1, r#"say \"hi\""#, "{k}");
    }
    // %{msec}t: milliseconds since the epoch; %a with X-Forwarded-For by
    // the trace's rule; a status condition and the < modifier.
    let f = r#"%{msec}t %a %<s %>s %400,501{X-Forwarded-For}i %D"#;
    let mut p = LogParser::new(&LogSpec {
        key: Some("http_x_forwarded_for/32/128".into()),
        xff: Some(Xff::TrustedHops(1)),
        ..spec(f, None)
    })
    .unwrap();
    assert_eq!(
        event(
            &mut p,
            "1460751420310 2001:db8::5 302 200 203.0.113.9, 10.0.0.1 1234"
        )
        .unwrap(),
        (1_460_751_420_310_000_000, "203.0.113.9".into(), 1)
    );
    let mut p = LogParser::new(&spec(f, None)).unwrap();
    assert_eq!(
        event(&mut p, "1460751420310 2001:db8::5 302 200 - 1234")
            .unwrap()
            .1,
        "2001:db8::5"
    );
    // %{c}a and %{c}h, the connection's peer (mod_remoteip), beside %a.
    let mut p = LogParser::new(&spec("%{c}a %{c}h %a %h %t", Some("peer_addr"))).unwrap();
    assert_eq!(
        event(
            &mut p,
            "10.0.0.1 10.0.0.1 203.0.113.9 203.0.113.9 [10/Oct/2000:13:55:36 -0700]"
        )
        .unwrap()
        .1,
        "10.0.0.1"
    );
    // A trailer, the three-letter %{Name}^to, is one field.
    let mut p = LogParser::new(&spec(
        "%t %{Grpc-Status}^to %a",
        Some("sent_trailer_grpc_status"),
    ))
    .unwrap();
    assert_eq!(
        event(&mut p, "[10/Oct/2000:13:55:36 -0700] 14 192.0.2.1")
            .unwrap()
            .1,
        "14"
    );
    // What mod_log_config does not define, and a directive twice, are
    // refused naming them; so is the format without its string.
    for (f, want) in [
        ("%h %Z", "%Z"),
        ("%h %{Referer}", "never finished"),
        ("%h %t %t", "appears twice"),
        ("%h %i", "braces"),
        ("%h %é", "%é"),
        ("%h %{Grpc-Status}^tx", "^tx"),
    ] {
        let e = LogParser::new(&spec(f, None)).err().unwrap().to_string();
        assert!(e.contains(want), "{f}: {e}");
    }
    let e = LogParser::new(&LogSpec {
        format: "apache".into(),
        ..LogSpec::default()
    })
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("LogFormat"), "{e}");
}

#[test]
fn json_lines_with_mapped_fields() {
    let mut p = LogParser::new(&LogSpec {
        format: "jsonl".into(),
        time: Some("start_time".into()),
        key: Some("x_forwarded_for/24".into()),
        weight: Some("req.n".into()),
        ..LogSpec::default()
    })
    .unwrap();
    let line = r#"{"start_time":"2016-04-15T20:17:00.310Z","x_forwarded_for":"10.0.35.28, 10.0.0.1","req":{"n":3}}"#;
    // An X-Forwarded-For list: the last entry by default, as Envoy.
    assert_eq!(
        event(&mut p, line),
        Ok((1_460_751_420_310_000_000, "10.0.0.0/24".into(), 3))
    );
    let e = event(&mut p, r#"{"x_forwarded_for":"1.2.3.4"}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("start_time") && e.contains("missing"), "{e}");
    let e = event(
        &mut p,
        r#"{"start_time":"2016-04-15","x_forwarded_for":"1.2.3.4"}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("start_time"), "{e}");
}

#[test]
fn alb_and_cloudfront() {
    let alb = r#"https 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.086 0.048 0.037 200 200 0 57 "GET https://www.example.com:443/users/7 HTTP/1.1" "curl/7.46.0" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337281-1d84f3d73c47ec4e58577259" "www.example.com" "arn:aws:acm:us-east-2:123456789012:certificate/12345678-1234-1234-1234-123456789012" 1 2018-07-02T22:22:48.364000Z "authenticate,forward" "-" "-" "10.0.0.1:80" "200" "-" "-""#;
    let mut p = parser("alb", Some("ip+route"));
    assert_eq!(
        event(&mut p, alb),
        Ok((
            1_530_570_180_186_641_000,
            "192.168.131.39 /users/:id".into(),
            1
        ))
    );
    let e = event(&mut p, "https 2018-07-02T22:23:00.186641Z app/x 1.2.3.4:5")
        .unwrap_err()
        .to_string();
    assert!(e.contains("4 fields"), "{e}");

    let mut p = parser("cloudfront", None);
    assert_eq!(
        p.parse("#Version: 1.0", &mut String::new()),
        Ok(Parsed::Header)
    );
    assert_eq!(
        p.parse(
            "#Fields: date time c-ip cs-uri-stem sc-bytes",
            &mut String::new()
        ),
        Ok(Parsed::Header)
    );
    assert_eq!(
        event(
            &mut p,
            "2019-12-04\t21:02:31\t192.0.2.100\t/index.html\t392"
        ),
        Ok((1_575_493_351_000_000_000, "192.0.2.100".into(), 1))
    );
    assert_eq!(p.time_field(), Some(("date", true)));
    let e = event(&mut p, "2019-12-04\t21:02:31\t192.0.2.100")
        .unwrap_err()
        .to_string();
    assert!(e.contains("3 tab-separated fields"), "{e}");
}

/// An ALB line as AWS documents its fields ("Access log entries": type,
/// time, elb, client:port, target:port, three processing times, the two
/// status codes, received and sent bytes, "request", "user_agent", ...),
/// with the client written as ALB writes it.
fn alb_line(client: &str) -> String {
    format!(
        r#"h2 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 {client} 10.0.1.252:48160 0.000 0.002 0.000 200 200 5 257 "GET https://10.0.2.105:773/ HTTP/2.0" "curl/7.46.0" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337327-72bd00b0343d75b906739c42" "-" "-" 1 2018-07-02T22:22:48.364000Z "redirect" "https://example.com:80/" "-" "10.0.0.1:80" "200" "-" "-" TID_1234"#
    )
}

#[test]
fn alb_client_port_splits_at_the_last_colon() {
    for (client, ip, ip64) in [
        ("192.168.131.39:2817", "192.168.131.39", "192.168.131.0/24"),
        // Compressed IPv6 then a port: the port is never part of the key.
        ("2001:db8::5:8080", "2001:db8::5", "2001:db8::/64"),
        (
            "2001:db8:85a3::8a2e:370:7334:443",
            "2001:db8:85a3::8a2e:370:7334",
            "2001:db8:85a3::/64",
        ),
        // Every group written (nine colon-separated parts).
        (
            "2001:0db8:0000:0000:0000:ff00:0042:8329:52113",
            "2001:db8::ff00:42:8329",
            "2001:db8::/64",
        ),
        // With brackets, as other software writes it.
        ("[2001:db8::5]:8080", "2001:db8::5", "2001:db8::/64"),
    ] {
        let line = alb_line(client);
        assert_eq!(
            event(&mut parser("alb", None), &line).unwrap().1,
            ip,
            "{client}"
        );
        assert_eq!(
            event(&mut parser("alb", Some("ip/24/64")), &line)
                .unwrap()
                .1,
            ip64,
            "{client}"
        );
    }
    // Two source ports of one client are one key.
    let mut p = parser("alb", None);
    let a = event(&mut p, &alb_line("2001:db8::5:8080")).unwrap().1;
    let b = event(&mut p, &alb_line("2001:db8::5:8081")).unwrap().1;
    assert_eq!(a, b);
    for bad in ["localhost:80", "2001:db8::5:port", "-"] {
        let e = event(&mut parser("alb", None), &alb_line(bad))
            .unwrap_err()
            .to_string();
        assert!(e.contains("client:port") && e.contains(bad), "{bad}: {e}");
    }
}

#[test]
fn envoy_picks_the_forwarded_for_entry_as_envoy_does() {
    let line = |xff: &str| {
        format!(
            r#"[2016-04-15T20:17:00.310Z] "GET /a HTTP/2" 200 - 0 5 3 2 "{xff}" "curl" "id" "h" "tcp://10.0.2.1:80""#
        )
    };
    let key = |xff: Xff, v: &str| {
        let mut p = LogParser::new(&LogSpec {
            format: "envoy".into(),
            xff: Some(xff),
            ..LogSpec::default()
        })
        .unwrap();
        event(&mut p, &line(v)).map(|e| e.1)
    };
    let list = "203.0.113.9, 198.51.100.7, 10.0.0.1";
    assert_eq!(key(Xff::Last, list).unwrap(), "10.0.0.1");
    assert_eq!(key(Xff::TrustedHops(0), list).unwrap(), "10.0.0.1");
    assert_eq!(key(Xff::TrustedHops(1), list).unwrap(), "198.51.100.7");
    assert_eq!(key(Xff::TrustedHops(2), list).unwrap(), "203.0.113.9");
    // More hops than entries, or an entry that is no address: Envoy's
    // fallback, the connection's peer (the last entry it logged).
    assert_eq!(key(Xff::TrustedHops(3), list).unwrap(), "10.0.0.1");
    assert_eq!(
        key(Xff::TrustedHops(1), "203.0.113.9, unknown, 10.0.0.1").unwrap(),
        "10.0.0.1"
    );
    assert_eq!(key(Xff::First, list).unwrap(), "203.0.113.9");
    assert_eq!(
        key(Xff::First, "unknown, 2001:db8::7, 10.0.0.1").unwrap(),
        "2001:db8::7"
    );
    // Two clients behind one proxy stay two keys.
    assert_ne!(
        key(Xff::TrustedHops(1), "203.0.113.9, 10.0.0.1").unwrap(),
        key(Xff::TrustedHops(1), "203.0.113.10, 10.0.0.1").unwrap()
    );
    // No address where the rule looks: the value is its own key, not an
    // error.
    assert_eq!(key(Xff::Last, "unknown").unwrap(), "unknown");
    assert_eq!(key(Xff::Last, "-").unwrap(), "-");
}

#[test]
fn cloudfront_fields_may_change_between_concatenated_files() {
    let mut p = parser("cloudfront", None);
    let mut held = String::new();
    let first = [
        "#Version: 1.0",
        "#Fields: date time c-ip cs-uri-stem",
        "2019-12-04\t21:02:31\t192.0.2.100\t/a",
    ];
    let second = [
        "#Version: 1.0",
        "#Fields: date time x-edge-location sc-bytes c-ip cs-method",
        "2019-12-04\t21:02:32\tLAX1\t392\t2001:db8::9\tGET",
    ];
    let mut keys = Vec::new();
    for line in first.iter().chain(&second).chain(&first) {
        if let Ok((t, k, _)) = event(&mut p, line) {
            keys.push((t / 1_000_000_000, k));
        }
    }
    assert_eq!(
        keys,
        [
            (1_575_493_351, "192.0.2.100".to_string()),
            (1_575_493_352, "2001:db8::9".to_string()),
            (1_575_493_351, "192.0.2.100".to_string()),
        ]
    );
    // A later list without the key's field is an error at its next line.
    let mut p = parser("cloudfront", None);
    for line in &first {
        p.parse(line, &mut held).unwrap();
    }
    p.parse("#Fields: date time cs-uri-stem", &mut held)
        .unwrap();
    let e = p
        .parse("2019-12-04\t21:02:33\t/b", &mut held)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no ip field"), "{e}");
}

#[test]
fn an_xff_rule_the_key_does_not_read_is_refused() {
    let e = LogParser::new(&LogSpec {
        format: "combined".into(),
        xff: Some(Xff::TrustedHops(1)),
        ..LogSpec::default()
    })
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("xff trusted_hops 1") && e.contains("\"ip\""),
        "{e}"
    );
    let nginx = LogSpec {
        format: "nginx".into(),
        log_format: Some("$msec \"$http_x_forwarded_for\"".into()),
        key: Some("http_x_forwarded_for/24".into()),
        xff: Some(Xff::First),
        ..LogSpec::default()
    };
    let mut p = LogParser::new(&nginx).unwrap();
    assert_eq!(
        event(&mut p, "1.5 \"203.0.113.9, 10.0.0.1\"").unwrap().1,
        "203.0.113.0/24"
    );
    assert_eq!(
        p.key_text(),
        "http_x_forwarded_for/24 (X-Forwarded-For first)"
    );
}

#[test]
fn unknown_formats_and_options_are_refused() {
    let e = LogParser::new(&LogSpec {
        format: "apache2".into(),
        ..LogSpec::default()
    })
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("combined") && e.contains("cloudfront"), "{e}");
    let e = LogParser::new(&LogSpec {
        format: "alb".into(),
        log_format: Some("$x".into()),
        ..LogSpec::default()
    })
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("nginx, apache and envoy"), "{e}");
    let e = LogParser::new(&LogSpec {
        format: "combined".into(),
        time: Some("status".into()),
        ..LogSpec::default()
    })
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("not a time"), "{e}");
}

/// Good and bad lines of several formats and keys: `parse_owned` gives
/// what `parse` gives for a wanted key, the same time and weight without
/// the key for another, and `parse`'s own error for every line wrong
/// where its time, key or weight are; a line wrong only past them is an
/// error only where its key is wanted.
#[test]
fn parse_owned_is_parse_where_wanted_and_its_errors_where_read() {
    // Wrong past the user agent, and between the referer and the agent.
    let bad_late = [
        format!("{COMBINED_LINE} extra"),
        COMBINED_LINE.replace("/\" \"Mozilla", "/\" Mozilla"),
    ];
    let bad_early = [
        COMBINED_LINE.replace("Oct", "Okt"),
        COMBINED_LINE.replace(" - alice [", " - alice "),
        COMBINED_LINE[..30].to_string(),
        COMBINED_LINE.replace("192.0.2.10", "localhost"),
        String::new() + "x",
    ];
    let good = [
        COMBINED_LINE.to_string(),
        COMBINED_LINE.replace("192.0.2.10", "2001:db8::1"),
        COMBINED_LINE.replace("192.0.2.10", "010.0.2.10"),
        COMBINED_LINE.replace("192.0.2.10", "10.0.2.10:443"),
        COMBINED_LINE.replace("13:55:36", "13:55:37"),
    ];
    for (key, weight) in [
        ("ip", None),
        ("ip/24", Some("bytes")),
        ("remote_addr", None),
        ("ip+route", None),
        ("header:user-agent", Some("bytes")),
    ] {
        let spec = LogSpec {
            format: "combined".into(),
            key: Some(key.into()),
            weight: weight.map(str::to_string),
            ..LogSpec::default()
        };
        let mut whole = LogParser::new(&spec).unwrap();
        let mut part = LogParser::new(&spec).unwrap();
        let (mut h1, mut h2) = (String::new(), String::new());
        let lines = good.iter().chain(&bad_early).chain(&bad_late);
        for line in lines {
            let want = whole.parse(line, &mut h1);
            let key_of = |p: &Parsed, held: &str| match p {
                Parsed::Event(_, Some(r), _) | Parsed::Elsewhere(_, Some(r), _) => {
                    line[r.clone()].to_string()
                }
                Parsed::Event(_, None, _) | Parsed::Elsewhere(_, None, _) => held.to_string(),
                _ => String::new(),
            };
            // Wanted: the same event (the key where it is), or error.
            let got = part.parse_owned(line, &mut h2, &|_| true);
            match (&want, &got) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(key_of(a, &h1), key_of(b, &h2), "{key}: {line}");
                    let (Parsed::Event(t1, _, w1), Parsed::Event(t2, _, w2)) = (a, b) else {
                        panic!("{key}: {line}: {a:?} {b:?}");
                    };
                    assert_eq!((t1, w1), (t2, w2));
                }
                _ => assert_eq!(want, got, "{key}: {line}"),
            }
            // Not wanted: the time and weight, or `parse`'s error when the
            // line is wrong where they or the key are.
            let got = part.parse_owned(line, &mut h2, &|_| false);
            match (&want, got) {
                (Ok(a @ Parsed::Event(t, _, w)), Ok(b @ Parsed::Elsewhere(t2, _, w2))) => {
                    assert_eq!((t, w), (&t2, &w2), "{key}: {line}");
                    assert_eq!(key_of(a, &h1), key_of(&b, &h2), "{key}: {line}");
                }
                (Err(e), got)
                    if bad_late.contains(line)
                        && (key != "header:user-agent" || line.ends_with("extra")) =>
                {
                    assert!(got.is_ok(), "{key}: {line}: {e}");
                }
                (Err(e), got) => assert_eq!(got, Err(e.clone()), "{key}: {line}"),
                (other, _) => panic!("{other:?}"),
            }
        }
        // Some line of each kind was an error, and some not.
        assert!(bad_late.iter().all(|l| whole.parse(l, &mut h1).is_err()));
        assert!(good.iter().any(|l| whole.parse(l, &mut h1).is_ok()));
    }
}

/// Compiling a format is linear in its variables: 200,000 of them (a
/// duplicate check that scanned the names compared 2·10^10 pairs, minutes
/// in a test build) compile, and the duplicate at the end is still found.
#[test]
fn formats_with_very_many_variables_compile_and_duplicates_are_found() {
    let n = 200_000;
    let nginx: String = (0..n).map(|i| format!("$v{i} ")).collect();
    let mut f = nginx::Nginx::new("nginx", &nginx).unwrap();
    assert_eq!(f.field(&format!("v{}", n - 1)).map(|_| ()), Some(()));
    let dup = format!("{nginx}$v0");
    let e = nginx::Nginx::new("nginx", &dup).err().unwrap().to_string();
    assert!(e.contains("$v0 appears twice"), "{e}");
    let envoy: String = (0..n).map(|i| format!("%REQ(H{i})% ")).collect();
    assert!(envoy::Envoy::new(&envoy).is_ok());
    let e = envoy::Envoy::new(&format!("{envoy}%REQ(H7)%"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("%REQ(H7)% appears twice"), "{e}");
}

#[test]
fn a_w3c_time_is_cached_as_its_date_and_time_together() {
    // The same time on another day, the same day at another time, and a
    // date and time that would read alike glued together: each its own
    // instant, as parsed alone.
    let mut p = parser("cloudfront", None);
    p.parse("#Fields: date time c-ip", &mut String::new())
        .unwrap();
    let lines = [
        ("2019-12-04\t21:02:31\t192.0.2.1", 1_575_493_351),
        ("2019-12-04\t21:02:31\t192.0.2.2", 1_575_493_351),
        ("2019-12-05\t21:02:31\t192.0.2.1", 1_575_579_751),
        ("2019-12-05\t21:02:32\t192.0.2.1", 1_575_579_752),
        ("2019-12-04\t21:02:32\t192.0.2.1", 1_575_493_352),
    ];
    for (line, secs) in lines {
        let (t, _, _) = event(&mut p, line).unwrap();
        assert_eq!(t, secs * 1_000_000_000, "{line}");
    }
    let e = event(&mut p, "2019-12-04\t21:02:3x\t192.0.2.1");
    assert!(e.is_err(), "{e:?}");
}

#[test]
fn a_number_ending_the_line_must_be_one() {
    // `common` ends with the bytes sent: a number or `-` (Apache's %b for
    // none); more text is a line of another format, refused naming it.
    let mut p = parser("common", None);
    for bytes in ["2326", "-", "0"] {
        let line =
            format!(r#"192.0.2.10 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 {bytes}"#);
        assert!(event(&mut p, &line).is_ok(), "{line}");
    }
    let e = event(
        &mut p,
        r#"192.0.2.10 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 2326 "-" "ua""#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("body_bytes_sent") && e.contains("not a number"),
        "{e}"
    );
    // A format ending with free text keeps all of it.
    let mut p = LogParser::new(&LogSpec {
        format: "nginx".into(),
        log_format: Some("$remote_addr [$time_local] $http_user_agent".into()),
        ..LogSpec::default()
    })
    .unwrap();
    let line = "192.0.2.10 [10/Oct/2000:13:55:36 -0700] Mozilla/5.0 (X11) 2326 x";
    assert!(event(&mut p, line).is_ok(), "{line}");
}

#[test]
fn times_read_through_the_cache_are_the_times_read_afresh() {
    // Texts that share their first 19 bytes and differ after (the cache
    // reads only their fraction and offset), with malformed fractions,
    // offsets and days among them, in a seeded order; in an Envoy text
    // log, and in JSON lines where bare numbers (read in seconds, not as
    // ISO 8601) come between them.
    let heads = [
        "2024-01-01T00:00:00",
        "2024-01-01T00:00:01",
        "1970-01-01T00:00:00",
        "2554-07-21T23:34:33",
        "2024-02-30T00:00:00",
        "2024-01-01 00:00:00",
    ];
    let tails = [
        "Z",
        ".000Z",
        ".5Z",
        ".123456789Z",
        ".1234567890Z",
        ".Z",
        "",
        "+01:00",
        "-05:30",
        "+0100",
        "+01",
        ".25-23:59",
        "+24:00",
        "z",
        "Zx",
        ".1",
        ".12a",
        "x",
    ];
    let envoy = LogSpec {
        format: "envoy".into(),
        log_format: Some("[%START_TIME%] %REQ(X-API-KEY)%".into()),
        key: Some("header:x-api-key".into()),
        ..LogSpec::default()
    };
    let json = LogSpec {
        format: "jsonl".into(),
        key: Some("k".into()),
        unit: TimeUnit::S,
        ..LogSpec::default()
    };
    for (spec, is_json) in [(envoy, false), (json, true)] {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut cached = LogParser::new(&spec).unwrap();
        let (mut ok, mut bad) = (0, 0);
        for _ in 0..3000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // The first head most often: runs of one second.
            let h = (x % 9) as usize;
            let head = heads[if h < heads.len() { h } else { 0 }];
            let tail = tails[(x >> 8) as usize % tails.len()];
            let text = if is_json && x >> 20 & 7 == 0 {
                format!("1704067200.{}", x >> 24 & 0xfff)
            } else {
                format!("{head}{tail}")
            };
            let line = if is_json {
                format!(r#"{{"time":"{text}","k":"a"}}"#)
            } else {
                format!("[{text}] k")
            };
            let mut fresh = LogParser::new(&spec).unwrap();
            let want = event(&mut fresh, &line);
            assert_eq!(event(&mut cached, &line), want, "{line}");
            if let Ok((t, _, _)) = want {
                if !text.starts_with("1704067200.") {
                    assert_eq!(Ok(t), time::parse_iso8601(&text));
                }
                ok += 1;
            } else {
                bad += 1;
            }
        }
        assert!(ok > 1000 && bad > 500, "{ok} read, {bad} refused");
    }
}
