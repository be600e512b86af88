//! `proxy_example`: the rate-limiting proxy of pingora's
//! `docs/user_guide/rate_limiter.md`, reduced to its
//! `request_filter` decision (`crate::model::proxy_example`), over a schedule
//! of requests: status, the three `X-Rate-Limit-*` headers, `Connection`,
//! and where the shared window starts.

use super::experiment::Experiment;
use super::RunContext;
use crate::clock::MILLI;
use crate::error::Result;
use crate::model::proxy_example::ProxyExample;
use crate::report::chart::{ChartSpec, Legend, Series, SeriesStyle};
use crate::report::{Output, ReportBuilder, Table};
use crate::scenario::Scenario;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// One request of the schedule.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Time since the first request, ms.
    pub t_ms: u64,
    /// The `appid` header, or `null` for none.
    pub appid: Option<String>,
}

/// Scenario parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Requests in time order.
    pub requests: Vec<Request>,
}

/// What the client saw.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Time, ms.
    pub t_ms: u64,
    /// The appid, if any.
    pub appid: Option<String>,
    /// 200 or 429.
    pub status: u16,
    /// `observe`'s return, `None` when not counted.
    pub observed: Option<i64>,
    /// `X-Rate-Limit-*` headers in order.
    pub headers: Vec<(String, String)>,
    /// `keep-alive` or `close`.
    pub connection: String,
    /// The shared window's start after this request (ms), if the Rate exists.
    pub window_start_ms: Option<u64>,
    /// This request flipped the shared window.
    pub flipped: bool,
    /// This request created the lazy global Rate.
    pub created: bool,
}

/// Runs the schedule through the example.
pub fn simulate(p: &Params, seed: u64) -> Vec<Row> {
    let mut proxy = ProxyExample::new(seed);
    let mut rows = Vec::new();
    for r in &p.requests {
        let before = proxy.rate().map(|r| r.window_start());
        let resp = proxy.request(r.appid.as_deref().map(str::as_bytes), r.t_ms * MILLI);
        let after = proxy.rate().map(|r| r.window_start());
        let (status, observed, headers, connection) = match resp {
            Ok(x) => (
                x.status,
                x.observed,
                x.headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .collect(),
                x.connection.as_str().to_string(),
            ),
            // A 1 s Rate cannot fault single-threaded; a panicking task
            // would drop the connection.
            Err(f) => (500, None, vec![], format!("panic: {}", f.message)),
        };
        rows.push(Row {
            t_ms: r.t_ms,
            appid: r.appid.clone(),
            status,
            observed,
            headers,
            connection,
            window_start_ms: after.map(|w| w / MILLI),
            flipped: before.is_some() && before != after,
            created: before.is_none() && after.is_some(),
        });
    }
    rows
}

/// The `proxy_example` kind: pingora's documented rate-limited proxy.
pub struct ProxyExampleKind;

impl Experiment for ProxyExampleKind {
    type Params = Params;
    type Plan = Params;
    type Outcome = Vec<Row>;

    fn validate(scenario: &Scenario, p: Params, _: &RunContext) -> Result<Params> {
        if p.requests.is_empty() {
            return Err(scenario.field_error("requests", "empty: expected at least one request"));
        }
        for (i, w) in p.requests.windows(2).enumerate() {
            if w[1].t_ms < w[0].t_ms {
                return Err(scenario.field_error(
                    format!("requests[{}].t_ms", i + 1),
                    format!(
                        "value {}: expected at least {} (time order)",
                        w[1].t_ms, w[0].t_ms
                    ),
                ));
            }
        }
        if let Some((i, r)) = p
            .requests
            .iter()
            .enumerate()
            .find(|(_, r)| r.t_ms > u64::MAX / MILLI)
        {
            return Err(scenario.field_error(
                format!("requests[{i}].t_ms"),
                format!("value {}: too large", r.t_ms),
            ));
        }
        Ok(p)
    }

    fn run(_: &Scenario, p: &Params, ctx: &RunContext) -> Result<Vec<Row>> {
        Ok(simulate(p, ctx.seed))
    }

    fn render(scenario: &Scenario, _: &Params, ctx: &RunContext, rows: Vec<Row>) -> Result<Output> {
        let (table, console) = response_table(&rows);
        let mut report = ReportBuilder::new(scenario, ctx.seed, None);
        report
            .md(&table.markdown())
                .md("\nA 429 carries `X-Rate-Limit-Limit: 1`, `X-Rate-Limit-Remaining: 0`, `X-Rate-Limit-Reset: 1` (hard-coded, whatever the window's real remaining time) and `Connection: close` (`set_keepalive(None)`). The window is shared by every appid and starts at the call that flips it, so the docs' claim that any request within 1 s of a previous one fails holds only for an appid alone on the proxy.\n")
            .field("rows", json!(rows))
            .csv(&table)
            .console(&console)
            .chart(&chart(&rows))?;
        Ok(report.finish())
    }
}

/// What the client saw, request by request, and the console's version.
fn response_table(rows: &[Row]) -> (Table, String) {
    let mut table = Table::new([
        "t (ms)",
        "appid",
        "observe()",
        "status",
        "headers",
        "window start (ms)",
        "note",
    ]);
    let mut console = String::new();
    for r in rows {
        let mut headers: Vec<String> = r.headers.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        headers.push(format!("Connection: {}", r.connection));
        let note = if r.created {
            "creates the lazy global Rate::new(1 s): first window starts here"
        } else if r.flipped {
            "flips the window shared by all appids"
        } else if r.appid.is_none() {
            "no appid: not counted, always passed"
        } else {
            ""
        };
        table.push([
            r.t_ms.to_string(),
            r.appid.clone().unwrap_or_else(|| "none".into()),
            r.observed.map(|o| o.to_string()).unwrap_or_default(),
            r.status.to_string(),
            headers.join(", "),
            r.window_start_ms.map(|w| w.to_string()).unwrap_or_default(),
            note.to_string(),
        ]);
        let short = if r.status == 429 {
            format!("X-Rate-Limit-Reset: 1 Connection: {}", r.connection)
        } else {
            format!("Connection: {}", r.connection)
        };
        console.push_str(&format!(
            "t={:>6}ms appid={} -> {} {}\n",
            r.t_ms,
            r.appid.as_deref().unwrap_or("None"),
            r.status,
            short
        ));
    }
    (table, console)
}

/// Request timeline chart: a lane per appid, a marker per status.
fn chart(rows: &[Row]) -> ChartSpec {
    let mut lanes: Vec<Option<String>> = Vec::new();
    for r in rows {
        if !lanes.contains(&r.appid) {
            lanes.push(r.appid.clone());
        }
    }
    lanes.sort_by_key(|l| (l.is_none(), l.clone()));
    let lane = |a: &Option<String>| lanes.iter().position(|l| l == a).unwrap_or(0) as f64;
    let mut chart = ChartSpec::new(
        "proxy-timeline",
        "pingora docs' rate-limited proxy: one shared Rate(1 s), limit 1 per appid per window",
        "time since the first request (ms)",
        "request lane (appid header)",
    );
    // Lanes are categories, not numbers on a scale: one row each.
    chart.y_categories = lanes
        .iter()
        .map(|l| match l {
            Some(a) => format!("appid {a}"),
            None => "no appid".to_string(),
        })
        .collect();
    chart.caption = "Each request of the docs' example at its time, in a lane per appid: green circles passed (200), vermillion markers were limited (429); each is labelled with the count Rate::observe returned for it (the request without an appid is not observed). Dashed lines mark when the shared Rate's window starts (it is created or flips on a call), so requests of different appids share one window clock.".into();
    for (status, color) in [(200u16, 2usize), (429, 3)] {
        let sel: Vec<&Row> = rows.iter().filter(|r| r.status == status).collect();
        let mut s = Series::new(
            if status == 200 {
                "200 passed (keep-alive); its number: observe's count"
            } else {
                "429 limited (Connection: close); its number: observe's count"
            },
            sel.iter()
                .map(|r| (r.t_ms as f64, lane(&r.appid)))
                .collect(),
            SeriesStyle::Points,
        );
        s.point_labels = Some(
            sel.iter()
                // the status is the marker's: the label is only n, so the
                // labels of requests 50 ms apart fit beside their points
                .map(|r| r.observed.map(|o| o.to_string()).unwrap_or_default())
                .collect(),
        );
        s.color = Some(color);
        chart.series.push(s);
    }
    chart.vlines = rows
        .iter()
        .filter(|r| r.created || r.flipped)
        .map(|r| {
            (
                r.t_ms as f64,
                format!("window starts {} ms", r.window_start_ms.unwrap_or(0)),
            )
        })
        .collect();
    let last = rows.last().map(|r| r.t_ms).unwrap_or(0) as f64;
    chart.x_range = Some((-50.0, last + 100.0));
    chart.legend = Legend::UpperLeft;
    chart
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn the_documented_schedule_is_exact() {
        let s = Scenario::parse(
            Path::new("scenarios/proxy-example.json"),
            include_str!("../../scenarios/proxy-example.json"),
        )
        .unwrap();
        let p: Params = s.params().unwrap();
        let rows = simulate(&p, 1);
        let got: Vec<(u64, Option<&str>, u16, &str)> = rows
            .iter()
            .map(|r| (r.t_ms, r.appid.as_deref(), r.status, r.connection.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, Some("1"), 200, "keep-alive"),
                (101, Some("1"), 429, "close"),
                (201, Some("1"), 429, "close"),
                (900, Some("2"), 200, "keep-alive"),
                (1050, Some("2"), 200, "keep-alive"),
                (1101, Some("1"), 200, "keep-alive"),
                (1150, Some("1"), 429, "close"),
                (1201, None, 200, "keep-alive"),
            ]
        );
        let limited = vec![
            ("X-Rate-Limit-Limit".to_string(), "1".to_string()),
            ("X-Rate-Limit-Remaining".to_string(), "0".to_string()),
            ("X-Rate-Limit-Reset".to_string(), "1".to_string()),
        ];
        for r in &rows {
            if r.status == 429 {
                assert_eq!(r.headers, limited);
            } else {
                assert!(r.headers.is_empty());
            }
        }
        let observed: Vec<Option<i64>> = rows.iter().map(|r| r.observed).collect();
        assert_eq!(
            observed,
            vec![
                Some(1),
                Some(2),
                Some(3),
                Some(1),
                Some(1),
                Some(1),
                Some(2),
                None
            ]
        );
        assert!(rows[0].created);
        assert!(rows[4].flipped);
        assert_eq!(rows.iter().filter(|r| r.flipped).count(), 1);
        assert_eq!(rows[4].window_start_ms, Some(1050));
        let out = crate::kinds::run(&s, &RunContext::for_scenario(&s)).unwrap();
        assert!(out
            .console
            .contains("t=  1050ms appid=2 -> 200 Connection: keep-alive"));
        assert!(out
            .console
            .contains("t=   101ms appid=1 -> 429 X-Rate-Limit-Reset: 1 Connection: close"));
    }
}
