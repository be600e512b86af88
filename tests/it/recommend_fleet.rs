//! `ratelab recommend` on fleets (`--replicas N --balancer B`) and for
//! Kong: the pick is what the decision lab's `deployment` measures on the
//! same requests, a key-hashing balancer makes a fleet of per-instance
//! limiters one instance, Kong's snippet fits the plugin's published
//! schema, and combinations that make no sense are refused in one line.

use crate::common::{ratelab, stderr};
use crate::recommend::{log, recommend};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The choosing part of `trace` (every request before the cut), as its
/// own CSV in `dir`.
fn first_part(dir: &Path, trace: &Path, j: &Value) -> PathBuf {
    let cut_rel = j["choose"]["to_ns"].as_u64().unwrap();
    let text = std::fs::read_to_string(trace).unwrap();
    let t0: u64 = text
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let mut first = String::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.split(',').next().unwrap();
        if i == 0 || t.parse::<u64>().unwrap() < t0 + cut_rel {
            first.push_str(line);
            first.push('\n');
        }
    }
    let p = dir.join("first.csv");
    std::fs::write(&p, first).unwrap();
    p
}

/// Runs `entry`'s deployment through the decision lab on the choosing part
/// and returns the fleet's row; the scenario's policy is the one the
/// deployment counts with (`deployment_policy`), else the intent's.
fn lab_row(dir: &Path, trace: &Path, j: &Value, entry: &Value) -> Value {
    first_part(dir, trace, j);
    let policy = entry
        .get("deployment_policy")
        .cloned()
        .unwrap_or(json!({"limit": 10, "interval_ms": 1000}));
    let sc = json!({"name": "lab", "kind": "decision_accuracy", "seed": 1,
        "policy": policy, "shapes": [],
        "trace": {"path": "first.csv"}, "deployment": entry["deployment"].clone()});
    std::fs::write(dir.join("lab.json"), sc.to_string()).unwrap();
    let out = dir.join("lab-out");
    let o = ratelab(&[
        "run",
        dir.join("lab.json").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = read_json(&out.join("lab").join("report.json"));
    let rows = r["rows"].as_array().unwrap();
    // The two exact limiters, then the one fleet.
    assert_eq!(rows.len(), 3, "{rows:?}");
    rows[2].clone()
}

/// Recommends `family` on a fresh 120 s log with `extra` options.
fn run(family: &str, extra: &[&str]) -> (tempfile::TempDir, PathBuf, Value) {
    let dir = tempfile::tempdir().unwrap();
    let trace = log(dir.path(), 120.0, 3);
    let out = dir.path().join("out");
    let o = recommend(&trace, family, &out, extra);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = read_json(&out.join("recommend.json"));
    (dir, trace, j)
}

#[test]
fn a_fleet_pick_is_the_fleet_labs_deployment() {
    for (family, extra) in [
        ("nginx", ["--replicas", "4", "--balancer", "round_robin"]),
        ("envoy-local", ["--replicas", "3", "--balancer", "random"]),
        (
            "envoy-ratelimit",
            ["--replicas", "4", "--balancer", "round_robin"],
        ),
        ("kong", ["--replicas", "3", "--balancer", "round_robin"]),
    ] {
        let (dir, trace, j) = run(family, &extra);
        let pick = &j["pick"];
        assert!(pick["meets"].as_bool().unwrap(), "{family}: {pick}");
        let d = &pick["deployment"];
        assert_eq!(
            d["replicas"],
            json!(extra[1].parse::<u64>().unwrap()),
            "{family}"
        );
        assert_eq!(d["balancer"], json!(extra[3]));
        let strategy = d["strategies"][0]["strategy"].as_str().unwrap();
        match family {
            "nginx" | "envoy-local" => {
                // Each replica its own copy of the setting.
                assert_eq!(strategy, "local");
                let mut s = d["strategies"][0].as_object().unwrap().clone();
                s.remove("strategy");
                assert_eq!(Value::Object(s), pick["limiter"]);
            }
            "envoy-ratelimit" => {
                assert_eq!(strategy, "central");
                assert_eq!(
                    pick["deployment_policy"]["limit"],
                    pick["limiter"]["requests"]
                );
            }
            _ => assert!(["local", "central", "periodic_sync"].contains(&strategy)),
        }
        assert!(
            j["fleet"].as_str().unwrap().contains("fleet of"),
            "{}",
            j["fleet"]
        );
        let row = lab_row(dir.path(), &trace, &j, pick);
        assert_eq!(row["allowed"], pick["admitted"], "{family}: {row}");
        assert_eq!(row["memory_bytes"], pick["memory_bytes"], "{family}");
        if pick.get("deployment_policy").is_none() {
            // The same policy: the harm figures are the lab's too.
            for f in ["compliant_denied_pct", "limited_excess_pct"] {
                let (a, b) = (pick[f].as_f64().unwrap(), row["harm"][f].as_f64().unwrap());
                assert!((a - b).abs() < 1e-9, "{family} {f}: recommend {a}, lab {b}");
            }
        }
        // The pick meets the target on the fleet, and nothing on the
        // frontier that meets it lets less through (unless held-out
        // slices rejected it).
        let ex = pick["limited_excess_pct"].as_f64().unwrap();
        for e in j["frontier"].as_array().unwrap() {
            if e["limited_excess_pct"].as_f64().unwrap() < ex {
                assert!(
                    !e["meets"].as_bool().unwrap() || e.get("rejected_on_held_out").is_some(),
                    "{family}: {e}"
                );
            }
        }
    }
}

#[test]
fn behind_a_key_hash_a_fleet_of_nginx_is_one_nginx() {
    // Maglev sends every request of a key to one replica: each key meets
    // one limiter, so the fleet decides as one instance, and the search
    // makes the same pick with the same figures (the memory is the
    // replicas' own).
    let dir = tempfile::tempdir().unwrap();
    let trace = log(dir.path(), 120.0, 3);
    let (one, four) = (dir.path().join("one"), dir.path().join("four"));
    assert!(recommend(&trace, "nginx", &one, &[]).status.success());
    let o = recommend(
        &trace,
        "nginx",
        &four,
        &["--replicas", "4", "--balancer", "maglev"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let (a, b) = (
        read_json(&one.join("recommend.json")),
        read_json(&four.join("recommend.json")),
    );
    assert_eq!(a["pick"]["limiter"], b["pick"]["limiter"]);
    for f in ["compliant_denied", "limited_excess"] {
        assert_eq!(a["pick"][f], b["pick"][f], "{f}");
    }
    assert!(a["pick"].get("deployment").is_none());
    // Round robin instead: each replica sees a quarter of a key's
    // requests, so the fleet lets more through at the single pick.
    let rr = dir.path().join("rr");
    let o = recommend(&trace, "nginx", &rr, &["--replicas", "4"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let c = read_json(&rr.join("recommend.json"));
    assert_eq!(c["pick"]["deployment"]["balancer"], "round_robin");
    let rate = |j: &Value| {
        let l = &j["pick"]["limiter"];
        l["rate_r_s"]
            .as_f64()
            .unwrap_or_else(|| l["rate_r_m"].as_f64().unwrap() / 60.0)
    };
    assert!(rate(&c) <= rate(&a), "{} vs {}", c["pick"], a["pick"]);
}

#[test]
fn fleet_combinations_that_make_no_sense_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let trace = log(dir.path(), 120.0, 3);
    for (extra, want) in [
        (&["--balancer", "maglev"][..], "give --replicas N too"),
        (&["--replicas", "0"][..], "--replicas 0: expected 1..=4096"),
        (&["--replicas", "5000"][..], "--replicas 5000"),
        (
            &["--replicas", "2", "--balancer", "from_trace"][..],
            "from_trace reads",
        ),
        (
            &["--replicas", "2", "--balancer", "dns"][..],
            "expected one of round_robin",
        ),
        (
            &[
                "--replicas",
                "2",
                "--balancer",
                "{\"type\": \"maglev\", \"table_size\": 10}",
            ][..],
            "table_size",
        ),
    ] {
        let out = dir.path().join("x");
        let o = recommend(&trace, "kong", &out, extra);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert_eq!(e.trim().lines().count(), 1, "{e}");
        assert!(e.contains(want), "{extra:?}: {e}");
        assert!(!out.exists());
    }
}

/// A small YAML reader for the snippets ratelab writes: block mappings
/// (`key: value`, `key:` opening a nested block), lists of mappings (`- key:
/// value`), `#` comments, scalars typed as YAML 1.2's core schema types
/// them (integers, floats, true/false, else strings; quotes removed).
pub(crate) fn yaml(text: &str) -> Value {
    let lines: Vec<(usize, String)> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| (l.len() - l.trim_start().len(), l.trim_start().to_string()))
        .collect();
    let mut i = 0;
    block(&lines, &mut i, 0)
}

fn scalar(s: &str) -> Value {
    let s = s.trim();
    if let Some(q) = s.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        return json!(q);
    }
    match s {
        "true" => return json!(true),
        "false" => return json!(false),
        _ => {}
    }
    if let Ok(i) = s.parse::<i64>() {
        return json!(i);
    }
    if let Ok(f) = s.parse::<f64>() {
        return json!(f);
    }
    json!(s)
}

fn block(lines: &[(usize, String)], i: &mut usize, indent: usize) -> Value {
    if *i < lines.len() && lines[*i].1.starts_with("- ") {
        let mut list = Vec::new();
        while *i < lines.len() && lines[*i].0 == indent && lines[*i].1.starts_with("- ") {
            // "- key: value" opens a mapping two columns in.
            let (ind, rest) = (lines[*i].0 + 2, lines[*i].1[2..].to_string());
            let mut sub: Vec<(usize, String)> = vec![(ind, rest)];
            let mut j = *i + 1;
            while j < lines.len() && lines[j].0 >= ind {
                sub.push(lines[j].clone());
                j += 1;
            }
            let mut k = 0;
            list.push(block(&sub, &mut k, ind));
            *i = j;
        }
        return Value::Array(list);
    }
    let mut map = Map::new();
    while *i < lines.len() && lines[*i].0 == indent {
        let line = lines[*i].1.clone();
        let (k, v) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("not a mapping line: {line}"));
        *i += 1;
        let v = v.trim();
        let value = if v.is_empty() {
            let next = lines.get(*i).map_or(indent, |l| l.0);
            assert!(next > indent, "{k}: an empty value");
            block(lines, i, next)
        } else {
            scalar(v)
        };
        assert!(
            map.insert(k.trim().to_string(), value).is_none(),
            "{k} twice"
        );
    }
    Value::Object(map)
}

/// The types of Kong's schema (`kong/db/schema`): what a config value of
/// each may be.
#[derive(Debug, Clone, Copy)]
enum Ty {
    Number,
    Integer,
    Str,
    Bool,
    OneOf(&'static [&'static str]),
    Record(&'static [(&'static str, Ty)]),
}

/// The redis record, `kong/tools/redis/schema.lua` (Kong/kong 22246ef,
/// lines 9-31): `host` (typedefs.host, a string), `port` (typedefs.port,
/// an integer), `timeout` (typedefs.timeout, an integer), `username`,
/// `password` (strings), `database` (integer), `ssl`, `ssl_verify`
/// (booleans), `server_name` (typedefs.sni, a string).
const REDIS: &[(&str, Ty)] = &[
    ("host", Ty::Str),
    ("port", Ty::Integer),
    ("timeout", Ty::Integer),
    ("username", Ty::Str),
    ("password", Ty::Str),
    ("database", Ty::Integer),
    ("ssl", Ty::Bool),
    ("ssl_verify", Ty::Bool),
    ("server_name", Ty::Str),
];

/// The rate-limiting plugin's `config` record,
/// `kong/plugins/rate-limiting/schema.lua` (Kong/kong 22246ef, lines
/// 80-99): six period limits (`type = "number", gt = 0`), `limit_by`
/// (one of consumer, credential, ip, service, header, path), `header_name`
/// (typedefs.header_name), `path` (typedefs.path), `policy` (local,
/// cluster, redis; lines 49-71), `fault_tolerant`, `redis`,
/// `hide_client_headers`, `error_code` (number, gt 0), `error_message`,
/// `sync_rate` (number).
const CONFIG: &[(&str, Ty)] = &[
    ("second", Ty::Number),
    ("minute", Ty::Number),
    ("hour", Ty::Number),
    ("day", Ty::Number),
    ("month", Ty::Number),
    ("year", Ty::Number),
    (
        "limit_by",
        Ty::OneOf(&["consumer", "credential", "ip", "service", "header", "path"]),
    ),
    ("header_name", Ty::Str),
    ("path", Ty::Str),
    ("policy", Ty::OneOf(&["local", "cluster", "redis"])),
    ("fault_tolerant", Ty::Bool),
    ("redis", Ty::Record(REDIS)),
    ("hide_client_headers", Ty::Bool),
    ("error_code", Ty::Number),
    ("error_message", Ty::Str),
    ("sync_rate", Ty::Number),
];

/// Every field of `v` exists in `schema` with a value of its type.
fn check_record(v: &Value, schema: &[(&str, Ty)], at: &str) -> Result<(), String> {
    let o = v.as_object().ok_or(format!("{at}: not a record"))?;
    for (k, x) in o {
        let ty = schema
            .iter()
            .find(|s| s.0 == k)
            .map(|s| s.1)
            .ok_or(format!("{at}.{k}: no such field in the schema"))?;
        let ok = match ty {
            Ty::Number => x.is_number(),
            Ty::Integer => x.is_i64() || x.is_u64(),
            Ty::Str => x.is_string(),
            Ty::Bool => x.is_boolean(),
            Ty::OneOf(w) => x.as_str().is_some_and(|s| w.contains(&s)),
            Ty::Record(r) => {
                check_record(x, r, &format!("{at}.{k}"))?;
                true
            }
        };
        if !ok {
            return Err(format!("{at}.{k}: {x} is not a {ty:?}"));
        }
    }
    Ok(())
}

/// The plugin's config as Kong validates it: the fields and types above,
/// then the schema's checks — `at_least_one_of` the periods (line 188),
/// `gt = 0` on each limit and on `error_code`, the redis policy's required
/// `redis.host`, `redis.port`, `redis.timeout` (189-200), `limit_by =
/// header` requiring `header_name` (201-204), and `validate_periods_order`
/// (lines 10-37): a longer period's limit not below a shorter one's,
/// `sync_rate` only with the redis policy, and there -1 or at least 0.02.
fn check_kong_config(c: &Value) -> Result<(), String> {
    check_record(c, CONFIG, "config")?;
    let periods = ["second", "minute", "hour", "day", "month", "year"];
    let set: Vec<f64> = periods.iter().filter_map(|p| c[*p].as_f64()).collect();
    if set.is_empty() {
        return Err("at least one of the periods".into());
    }
    if set.windows(2).any(|w| w[1] < w[0]) || set.iter().any(|&x| x <= 0.0) {
        return Err("period limits out of order or not > 0".into());
    }
    if c["error_code"].as_f64().is_some_and(|x| x <= 0.0) {
        return Err("error_code must be > 0".into());
    }
    let policy = c["policy"].as_str().unwrap_or("local");
    let sync = c["sync_rate"].as_f64().unwrap_or(-1.0);
    if policy != "redis" && sync != -1.0 {
        return Err("sync_rate can only be used with the redis policy".into());
    }
    if policy == "redis" {
        if sync != -1.0 && sync < 0.02 {
            return Err("sync_rate must be greater than 0.02, or -1 to disable".into());
        }
        for f in ["host", "port", "timeout"] {
            if c["redis"][f].is_null() {
                return Err(format!("redis.{f} is required with the redis policy"));
            }
        }
    }
    if c["limit_by"] == "header" && c["header_name"].is_null() {
        return Err("limit_by header requires header_name".into());
    }
    Ok(())
}

#[test]
fn the_schema_check_refuses_what_kong_refuses() {
    let ok = json!({"second": 5, "limit_by": "ip", "policy": "local", "sync_rate": -1});
    assert_eq!(check_kong_config(&ok), Ok(()));
    for bad in [
        json!({"second": 5, "policy": "local", "sync_rate": 0.5}),
        json!({"second": 5, "policy": "redis", "sync_rate": 0.01, "redis": {"host": "r", "port": 1, "timeout": 1}}),
        json!({"second": 5, "policy": "redis", "sync_rate": -1}),
        json!({"second": 5, "minute": 4}),
        json!({"policy": "local"}),
        json!({"second": 5, "seconds": 5}),
        json!({"second": "5"}),
        json!({"second": 5, "limit_by": "cookie"}),
        json!({"second": 5, "limit_by": "header"}),
        json!({"second": 5, "redis": {"hostname": "r"}}),
        json!({"second": 5, "redis": {"port": 63.5}}),
    ] {
        assert!(check_kong_config(&bad).is_err(), "{bad} passed");
    }
}

#[test]
fn kong_snippets_fit_the_plugins_schema() {
    // A single node (local or redis realtime), and a fleet whose search
    // also tries synced redis.
    for extra in [&[][..], &["--replicas", "3"][..]] {
        let (dir, _, j) = run("kong", extra);
        assert_eq!(j["snippet"], "kong.yml");
        let text = std::fs::read_to_string(dir.path().join("out").join("kong.yml")).unwrap();
        let y = yaml(&text);
        assert_eq!(y["_format_version"], "3.0", "{text}");
        let plugins = y["plugins"].as_array().unwrap();
        assert_eq!(plugins.len(), 1);
        assert_eq!(plugins[0]["name"], "rate-limiting");
        let c = &plugins[0]["config"];
        check_kong_config(c).unwrap_or_else(|e| panic!("{e}:\n{text}"));
        // The config is the pick.
        let l = &j["pick"]["limiter"];
        assert_eq!(c["policy"], l["policy"], "{text}");
        assert_eq!(c["sync_rate"].as_f64(), l["sync_rate"].as_f64());
        let (period, limit) = ["second", "minute", "hour", "day"]
            .iter()
            .find_map(|p| l[*p].as_u64().map(|v| (*p, v)))
            .unwrap();
        assert_eq!(c[period].as_u64(), Some(limit), "{text}");
    }
}

#[test]
fn the_yaml_reader_reads_nesting_lists_and_types() {
    let y = yaml("# c\na: 1\nb:\n  c: x\n  d:\n    - e: 2.5\n      f: true\n    - e: \"3\"\n");
    assert_eq!(
        y,
        json!({"a": 1, "b": {"c": "x", "d": [{"e": 2.5, "f": true}, {"e": "3"}]}})
    );
}

/// Kong on 8 replicas behind Envoy's largest Maglev table and ring: every
/// setting measured is a fleet, and each built its own 5,000,011-slot table
/// or 8M-entry ring (about 460 s for the Maglev case); built once, the
/// whole recommendation takes about a second. The limit here only guards
/// against that hang.
#[test]
fn a_large_maglev_table_or_ring_is_built_once_not_per_setting() {
    let trace = crate::common::root().join("scenarios/traces/recommend-log.csv.gz");
    for balancer in [
        r#"{"type": "maglev", "table_size": 5000011}"#,
        r#"{"type": "ring_hash", "min_ring_size": 8388608, "max_ring_size": 8388608}"#,
    ] {
        let out = tempfile::tempdir().unwrap();
        let o = std::process::Command::new("timeout")
            .args([
                "120",
                env!("CARGO_BIN_EXE_ratelab"),
                "recommend",
                "--trace",
                trace.to_str().unwrap(),
                "--limit",
                "10",
                "--interval-ms",
                "1000",
                "--for",
                "kong",
                "--replicas",
                "8",
                "--balancer",
                balancer,
                "--out",
                out.path().to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{balancer}: {}", stderr(&o));
        assert!(out.path().join("kong.yml").exists(), "{balancer}");
    }
}
