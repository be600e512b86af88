//! The decision lab's candidates: a table with one row per limiter model.
//! Adding a limiter to the lab (and to `replay --algo limiter`) is one
//! model file in `src/model/` plus one row here.
//!
//! Each row names a model, its parameters (a `limiters` entry may give
//! them; lists expand to a grid, see [`super::param_grid`]) and its builder in
//! `rows.rs`. Without `limiters`, [`default_entries`] is the candidate set.

use super::param_grid::{Args, Fixed, Param};
use super::rows;
use super::Policy;
use crate::clock::{Nanos, MILLI};
use crate::error::{Error, Result};
use crate::lab::Shape;
use crate::model::Admit;
use std::time::Duration;

/// One limiter under test: its label, its family (one chart series per
/// family), what it is (its [`MODELS`] row, resolved arguments and
/// scope: charts and tables read these, never the labels) and the model
/// deciding its requests.
pub struct Candidate {
    /// Label in tables and charts (unique in a run).
    pub name: String,
    /// Family: candidates of one family differ only in a parameter (a
    /// sketch shape, say) and share a chart series.
    pub family: String,
    /// Its [`MODELS`] row's `model` (empty: a limiter of the caller's own,
    /// [`Candidate::new`]).
    pub model: String,
    /// Its arguments, fixed defaults filled in ([`Args::resolved`]); which
    /// came from a list says [`Args::varies`].
    pub args: Args,
    /// Whose requests one instance decides.
    pub scope: Scope,
    /// The model.
    pub limiter: Box<dyn Admit + Send>,
}

/// Whose requests one instance of a candidate's model decides.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// One instance per key: the policy's own reading.
    #[default]
    PerKey,
    /// One instance for every key (tower as it is used, `scope: global`):
    /// not a per-key limiter.
    Global,
}

impl Scope {
    /// The scope `args` ask for (`scope: global`, else per key).
    pub fn of(args: &Args) -> Self {
        match args.str("scope") {
            Some("global") => Scope::Global,
            _ => Scope::PerKey,
        }
    }
}

impl Candidate {
    /// A candidate whose family is its name.
    ///
    /// # Examples
    /// ```
    /// use ratelab::lab::decision::Candidate;
    /// use ratelab::model::governor::GovernorKeyed;
    /// use std::time::Duration;
    /// let c = Candidate::new("ours", Box::new(GovernorKeyed::new(Duration::from_millis(10), 100)?));
    /// assert_eq!(c.family, "ours");
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn new(name: impl Into<String>, limiter: Box<dyn Admit + Send>) -> Self {
        let name = name.into();
        Self {
            family: name.clone(),
            name,
            model: String::new(),
            args: Args::default(),
            scope: Scope::PerKey,
            limiter,
        }
    }

    /// The same candidate in family `family`.
    pub fn in_family(mut self, family: impl Into<String>) -> Self {
        self.family = family.into();
        self
    }
}

/// Unix time of the run's virtual time zero, in ns: the first request of
/// a trace (its timestamps are absolute), or a workload's stated epoch.
///
/// Known only once the first request is read, after the candidates are
/// built, so it is a handle the lab sets then and the models that align
/// windows to Unix time (as envoyproxy/ratelimit, Kong, Redis fixed windows
/// and Cloudflare's counters do upstream) read when they make a key's
/// state. Unset, it reads 0: virtual time is Unix time.
///
/// # Examples
/// ```
/// use ratelab::lab::decision::Origin;
/// let o = Origin::default();
/// assert_eq!(o.offset(1_000_000_000), 0);
/// o.set(1_767_225_600_700_000_000); // 2026-01-01T00:00:00.7Z
/// assert_eq!(o.get(), 1_767_225_600_700_000_000);
/// // A window of 1 s aligned to Unix time is 0.7 s under way at virtual 0.
/// assert_eq!(o.offset(1_000_000_000), 700_000_000);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Origin(std::sync::Arc<std::sync::OnceLock<Nanos>>);

impl Origin {
    /// Sets the origin (the first call wins: the first request's time).
    pub fn set(&self, unix_ns: Nanos) {
        let _ = self.0.set(unix_ns);
    }

    /// The origin, Unix ns (0 while unset).
    pub fn get(&self) -> Nanos {
        self.0.get().copied().unwrap_or(0)
    }

    /// Whether it has been set.
    pub fn is_set(&self) -> bool {
        self.0.get().is_some()
    }

    /// How far into a Unix-aligned window of `interval` ns virtual time
    /// zero is: `window = ⌊(t + offset) / interval⌋` aligns to Unix time.
    pub fn offset(&self, interval: Nanos) -> Nanos {
        if interval == 0 {
            0
        } else {
            self.get() % interval
        }
    }
}

/// What a row needs to build its candidates.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The policy every candidate enforces.
    pub policy: Policy,
    /// Sketch shapes of the sketch-backed candidates.
    pub shapes: Vec<Shape>,
    /// uber-go's slack.
    pub uber_slack: i64,
    /// The run's seed (sketch hash rows derive from it).
    pub seed: u64,
    /// Most bytes one candidate's state may take up front (`--max-memory`).
    pub max_memory: u64,
    /// The working directory of `exec` children: the scenario's folder
    /// (`None`: ratelab's own, as for `replay`).
    pub workdir: Option<std::path::PathBuf>,
    /// Unix time of virtual time zero (set by the lab at the first request).
    pub origin: Origin,
}

impl Setup {
    /// A setup for building candidates outside a scenario (`recommend`,
    /// `replay`, tests): `policy` and `seed`, no sketch shapes, uber-go's
    /// default slack, no memory cap, `exec` children in ratelab's own
    /// working directory, and a fresh time-origin handle.
    ///
    /// # Examples
    /// ```
    /// use ratelab::lab::decision::{Policy, Setup};
    /// let s = Setup::plain(Policy { limit: 10, interval_ms: 1000 }, 7);
    /// assert_eq!((s.seed, s.uber_slack, s.shapes.len()), (7, 10, 0));
    /// ```
    pub fn plain(policy: Policy, seed: u64) -> Self {
        Setup {
            policy,
            shapes: Vec::new(),
            uber_slack: super::default_slack(),
            seed,
            max_memory: u64::MAX,
            workdir: None,
            origin: Origin::default(),
        }
    }

    /// The policy's interval.
    pub fn interval(&self) -> Duration {
        Duration::from_millis(self.policy.interval_ms)
    }
    /// The policy's interval, ns.
    pub fn interval_ns(&self) -> Nanos {
        self.policy.interval_ms * MILLI
    }
}

/// One limiter model in the lab: its parameters and how to build a
/// candidate from them.
pub struct ModelRow {
    /// The `model` value of a `limiters` entry.
    pub model: &'static str,
    /// What it models, for `--help` and the README.
    pub summary: &'static str,
    /// The parameters a `limiters` entry may give (defaults follow the
    /// policy).
    pub params: &'static [Param],
    /// Parameters the row's own label already shows (left out of the
    /// `name=value` suffix).
    pub in_label: &'static [&'static str],
    /// Builds one candidate: (family label, the model). The family label
    /// of a default entry is the candidate's name.
    pub build: fn(&Setup, &Args) -> Result<Built>,
}

/// What a row builds: the family label (and the member label when the row
/// names its members itself), and the model.
pub struct Built {
    /// Family label (a chart series).
    pub family: String,
    /// The candidate's label, when it differs from the family's.
    pub name: Option<String>,
    /// The model.
    pub limiter: Box<dyn Admit + Send>,
}

pub(super) fn built(family: impl Into<String>, limiter: Box<dyn Admit + Send>) -> Result<Built> {
    Ok(Built {
        family: family.into(),
        name: None,
        limiter,
    })
}

const ESTIMATE: Param = Param::choice(
    "estimate",
    &["docs", "proportional"],
    "docs: observe(key, w) > limit -> deny (counts denied requests); proportional: prev x (1 - elapsed) + curr + w - 1 >= limit -> deny, observes admitted requests (default docs)",
)
.or(Fixed::Word("docs"));

/// Every model name of [`MODELS`], comma-separated, for "expected one of"
/// messages.
///
/// # Examples
///
/// ```
/// let known = ratelab::lab::decision::known_models();
/// assert!(known.contains("token_bucket") && known.contains(", gcra"));
/// ```
pub fn known_models() -> String {
    MODELS
        .iter()
        .map(|r| r.model)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `ratelab list --models`: every row of [`MODELS`] with what it models
/// (the upstream it follows) and each parameter's type, range and default.
///
/// # Examples
/// ```
/// let text = ratelab::lab::decision::models_text();
/// assert!(text.contains("nginx_limit_req"));
/// assert!(text.contains("nodelay"));
/// ```
pub fn models_text() -> String {
    use super::param_grid::ParamType;
    let mut out = String::from("Limiter models of decision_accuracy (the \"model\" of a \"limiters\" entry; a list in a field expands to one candidate per value):\n");
    for r in MODELS {
        out.push_str(&format!("\n{}\n    {}\n", r.model, r.summary));
        for p in r.params {
            let kind = match p.kind {
                ParamType::Int { min, max } => format!("whole number {min}..={max}"),
                ParamType::Float { above, max } if max.is_finite() => {
                    format!("number > {above}, at most {max}")
                }
                ParamType::Float { above, .. } => format!("number > {above}"),
                ParamType::Bool => "true or false".to_string(),
                ParamType::Choice(words) => format!("one of {}", words.join(", ")),
                ParamType::Argv => "a command line (list of strings)".to_string(),
                ParamType::Text => "text".to_string(),
                ParamType::Fields { .. } => "an object of named values".to_string(),
            };
            out.push_str(&format!("    {:<18} {kind}: {}\n", p.name, p.doc));
        }
    }
    out
}

/// Every limiter model of the lab.
pub const MODELS: &[ModelRow] = &[
    ModelRow {
        model: "pingora_rate",
        summary: "pingora-limits Rate as a limiter, on a count-min sketch per window or exact counters",
        params: &[
            ESTIMATE,
            Param::choice("counters", &["sketch", "exact"], "sketch (default) or exact per-key counters").or(Fixed::Word("sketch")),
            Param::int("hashes", 1, 64, "sketch rows (default 4)").or(Fixed::Int(4)),
            Param::int("slots", 1, 1 << 30, "sketch counters per row (default 1024)").or(Fixed::Int(1024)),
        ],
        in_label: &["estimate", "counters", "hashes", "slots"],
        build: rows::pingora_rate,
    },
    ModelRow {
        model: "token_bucket",
        summary: "golang.org/x/time/rate Limiter per key, AllowN(t, w)",
        params: &[
            Param::positive("rate_per_s", "tokens per second (default limit / interval)"),
            Param::int("burst", 0, i64::MAX, "bucket depth (default limit; 0 is valid upstream and admits nothing at a finite rate)"),
        ],
        in_label: &[],
        build: rows::token_bucket,
    },
    ModelRow {
        model: "traefik_rate_limit",
        summary: "Traefik's rateLimit middleware in memory: x/time/rate per source through Reserve with a max delay, dropped after a TTL",
        params: &[
            Param::int("average", 1, u32::MAX as i64, "requests per period (default limit)"),
            Param::int("period_ms", 0, 86_400_000, "the period, ms; 0 is 1 s as in Traefik (default the interval)"),
            Param::int("burst", 0, u32::MAX as i64, "bucket depth; 0 is 1 as in Traefik (default limit)"),
        ],
        in_label: &[],
        build: rows::traefik_rate_limit,
    },
    ModelRow {
        model: "gcra_governor",
        summary: "the real governor crate: keyed GCRA on its fake clock, check_key_n",
        params: &[
            Param::positive("rate_per_s", "cells per second: period = 1 / rate (default limit / interval)"),
            Param::int("burst", 1, u32::MAX as i64, "burst capacity in cells (default limit)"),
        ],
        in_label: &[],
        build: rows::gcra_governor,
    },
    ModelRow {
        model: "tower",
        summary: "tower RateLimit (fixed window; load-shed: reject instead of wait), one instance per key or for all keys",
        params: &[Param::choice("scope", &["per_key", "global"], "per_key (default) or global (one instance, as tower is used)").or(Fixed::Word("per_key"))],
        in_label: &["scope"],
        build: rows::tower,
    },
    ModelRow {
        model: "uber_go",
        summary: "uber-go/ratelimit per key (atomic-int64): a request that would wait is denied",
        params: &[Param::int("slack", -1_000_000, 1_000_000, "slack in requests (default the scenario's uber_slack, 10)")],
        in_label: &["slack"],
        build: rows::uber_go,
    },
    ModelRow {
        model: "nginx_limit_req",
        summary: "nginx limit_req (ngx_http_limit_req_module): ms clock, excess in thousandths, burst, nodelay or delay=, an LRU zone",
        params: &[
            Param::int("rate_r_s", 1, 1 << 40, "rate in requests per second (default the policy's, as r/s when exact, else r/m)"),
            Param::int("rate_r_m", 1, 1 << 40, "rate in requests per minute"),
            Param::int("burst", 0, 1 << 40, "burst (default limit - 1: with the free first request a fresh key gets limit at once)"),
            Param::flag("nodelay", "admit the burst at once (default false: as nginx ships, excess requests within the burst are held)").or(Fixed::Bool(false)),
            Param::int("delay", 1, 1 << 40, "delay=N: the first N excess requests pass at once, the rest are held (their delay is reported)"),
            Param::int("zone_mib", 1, 1 << 16, "shared-memory zone in MiB (default 10); a full zone evicts its oldest key").or(Fixed::Int(10)),
        ],
        in_label: &["nodelay"],
        build: rows::nginx_limit_req,
    },
    ModelRow {
        model: "envoy_local_rate_limit",
        summary: "Envoy local rate limit filter: the continuous AtomicTokenBucket (1.31+) or the timer-refilled bucket (before)",
        params: &[
            Param::choice("bucket", &["continuous", "timer"], "continuous (default since 1.31) or timer (whole tokens_per_fill at each fill_interval tick)").or(Fixed::Word("continuous")),
            Param::int("max_tokens", 1, u32::MAX as i64, "bucket size (default limit)"),
            Param::int("tokens_per_fill", 1, u32::MAX as i64, "tokens per fill interval (default limit)"),
            Param::int("fill_interval_ms", 50, 86_400_000, "fill interval in ms (default the policy's interval; Envoy refuses < 50 ms)"),
            Param::choice("scope", &["per_key", "global"], "one bucket per key (descriptor) or one for all").or(Fixed::Word("per_key")),
            Param::int("monotonic_origin_ns", 0, i64::MAX, "the monotonic clock's reading at the run's time 0, i.e. the proxy's uptime (default 0): the continuous bucket computes in f64 seconds of that clock, so its rounding (a fresh 1-token bucket refusing its first request at ~3000 s) depends on it; the timer bucket's ticks count from the limiter's creation and do not").or(Fixed::Int(0)),
        ],
        in_label: &["bucket", "scope"],
        build: rows::envoy,
    },
    ModelRow {
        model: "guava_smooth_bursty",
        summary: "Guava RateLimiter.create(r) (SmoothBursty, 1 s of stored permits), tryAcquire(w) without timeout",
        params: &[
            Param::positive("permits_per_s", "permits per second (default limit / interval)"),
            Param::choice("call", &["try_acquire", "acquire"], "try_acquire (default: tryAcquire(w), refused when it would wait) or acquire (acquire(w): always admitted, after the wait it returns, reported as the delay)").or(Fixed::Word("try_acquire")),
        ],
        in_label: &["call"],
        build: rows::guava,
    },
    ModelRow {
        model: "sliding_window_counter",
        summary: "Cloudflare's sliding-window counter: exact counts of the current and previous aligned window, previous weighted by the time left",
        params: &[
            Param::flag("count_denied", "denied requests count too, as Cloudflare's counters count every request (default true)").or(Fixed::Bool(true)),
            Param::int("mitigation_ms", 0, 86_400_000, "Cloudflare's asynchronous production design: the request that takes the rate over the limit passes and mitigates its key for this long, its requests then denied without being counted (default 0: decided synchronously on the counts)").or(Fixed::Int(0)),
        ],
        in_label: &[],
        build: rows::sliding_window_counter,
    },
    ModelRow {
        model: "fixed_window_counter",
        summary: "the Redis INCR + EXPIRE fixed window (window from the key's first request) or aligned windows",
        params: &[
            Param::choice("align", &["first_request", "aligned"], "first_request (INCR + EXPIRE, default) or aligned (floor(t / interval))").or(Fixed::Word("first_request")),
            Param::choice("order", &["incr_then_compare", "get_then_incr"], "INCR then compare (counts denied requests, default) or GET then INCR (the Redis docs' second pattern: denied not counted, limit + 1 pass)").or(Fixed::Word("incr_then_compare")),
            Param::int("requests", 1, u32::MAX as i64, "requests per window (default limit), e.g. envoyproxy/ratelimit's requests_per_unit"),
            Param::int("window_ms", 1, 86_400_000, "the window, ms (default the interval), e.g. a ratelimit unit: 1000, 60000, 3600000, 86400000"),
        ],
        in_label: &["align"],
        build: rows::fixed_window_counter,
    },
    ModelRow {
        model: "gcra",
        summary: "a GCRA of our own (TAT, emission interval, tolerance), decision for decision equal to governor",
        params: &[
            Param::positive("rate_per_s", "cells per second (default limit / interval)"),
            Param::int("burst", 1, u32::MAX as i64, "burst capacity in cells (default limit)"),
        ],
        in_label: &[],
        build: rows::gcra,
    },
    ModelRow {
        model: "exec",
        summary: "a limiter of your own in any language: a child process speaking docs/book/src/protocol.md on stdin/stdout",
        params: &[
            Param::argv("command", "the program and its arguments, e.g. [\"python3\", \"examples/limiters/sliding_window.py\"] (required; the child runs in the scenario's folder, so relative paths, the program's and its arguments', are from there; with `replay --limiter`, from ratelab's working directory)"),
            Param::text("name", "the candidate's label (default \"exec <command>\")"),
            Param::int("timeout_ms", 1, 3_600_000, "how long the child may take to answer one batch before it is killed (default 30000)"),
            Param::fields("env", &[], "environment variables of the child, e.g. {\"PYTHONHASHSEED\": \"0\"}: it gets these and nothing else (default none)"),
            Param::fields("params", rows::EXEC_HELLO_FIELDS, "named values sent to the child as key=value words of its hello, e.g. {\"rate_per_s\": 7.5, \"burst\": 4} (default none)"),
        ],
        in_label: &["command", "name", "timeout_ms", "env", "params"],
        build: rows::exec,
    },
];
/// The default candidates (a scenario without `limiters`): pingora Rate in
/// both patterns on every sketch shape and on exact counters, then one
/// candidate of every other model with the policy's parameters.
pub fn default_entries(setup: &Setup) -> Vec<(&'static str, Args)> {
    let mut out = Vec::new();
    for estimate in ["docs", "proportional"] {
        for sh in &setup.shapes {
            out.push((
                "pingora_rate",
                Args::of(&[
                    ("estimate", estimate.into()),
                    ("hashes", (sh.hashes as u64).into()),
                    ("slots", (sh.slots as u64).into()),
                ]),
            ));
        }
        out.push((
            "pingora_rate",
            Args::of(&[("estimate", estimate.into()), ("counters", "exact".into())]),
        ));
    }
    out.push(("token_bucket", Args::default()));
    out.push(("gcra_governor", Args::default()));
    out.push(("tower", Args::of(&[("scope", "global".into())])));
    out.push(("tower", Args::of(&[("scope", "per_key".into())])));
    out.push(("uber_go", Args::default()));
    out
}

/// The row of a model name.
pub fn row(model: &str) -> Option<&'static ModelRow> {
    MODELS.iter().find(|r| r.model == model)
}

/// Builds the candidate of `model` with `args`; its name is the family
/// label, then the given parameters the label does not show, then the
/// varying ones (those that came from a list).
pub fn build(setup: &Setup, model: &ModelRow, args: &Args) -> Result<Candidate> {
    let resolved = args.resolved(model.params);
    let b = (model.build)(setup, &resolved)?;
    let (fixed, varying) = args.suffixes(model.in_label);
    let join = |a: String, b: &str| if b.is_empty() { a } else { format!("{a} {b}") };
    let family = join(b.family, &fixed);
    let name = join(
        b.name.map_or_else(|| family.clone(), |n| join(n, &fixed)),
        &varying,
    );
    Ok(Candidate {
        name,
        family,
        model: model.model.to_string(),
        scope: Scope::of(&resolved),
        args: resolved,
        limiter: b.limiter,
    })
}

/// The default candidates, in order.
///
/// # Examples
/// ```
/// use ratelab::lab::decision::{candidates, Policy, Setup};
/// let setup = Setup { policy: Policy { limit: 10, interval_ms: 1000 }, shapes: vec![],
///                     uber_slack: 10, seed: 1, max_memory: 1 << 30, workdir: None,
///                     origin: Default::default() };
/// let names: Vec<String> = candidates(&setup)?.into_iter().map(|c| c.name).collect();
/// assert_eq!(names[0], "pingora Rate docs exact");
/// assert!(names.contains(&"governor GCRA per key".to_string()));
/// # Ok::<(), ratelab::error::Error>(())
/// ```
pub fn candidates(setup: &Setup) -> Result<Vec<Candidate>> {
    default_entries(setup)
        .iter()
        .map(|(m, a)| {
            let r = row(m).ok_or_else(|| Error::internal(format!("no model row {m}")))?;
            build(setup, r, a)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::decision::param_grid::{expand, ParamType};
    use serde_json::json;

    fn setup() -> Setup {
        let policy = Policy {
            limit: 100,
            interval_ms: 1000,
        };
        Setup {
            max_memory: 1 << 30,
            ..Setup::plain(policy, 1)
        }
    }

    /// A candidate says what it is in typed fields: its model row, its
    /// arguments with the fixed defaults filled in, which came from a list,
    /// and its scope; the label is for people.
    #[test]
    fn candidates_carry_model_args_and_scope() {
        let r = row("token_bucket").unwrap();
        let entry = json!({"model": "token_bucket", "burst": [25, 50]});
        let grid = expand(entry.as_object().unwrap(), r.params, "limiters[0]").unwrap();
        let c = build(&setup(), r, &grid[1]).unwrap();
        assert_eq!(c.model, "token_bucket");
        assert_eq!(c.args.u64("burst"), Some(50));
        assert!(c.args.varies("burst"));
        assert_eq!(c.scope, Scope::PerKey);

        let r = row("tower").unwrap();
        let global = build(&setup(), r, &Args::of(&[("scope", json!("global"))])).unwrap();
        assert_eq!(global.scope, Scope::Global);
        let per_key = build(&setup(), r, &Args::default()).unwrap();
        assert_eq!(per_key.scope, Scope::PerKey);
        // The fixed default is in the resolved args, not in the label.
        assert_eq!(per_key.args.str("scope"), Some("per_key"));
        assert!(!per_key.name.contains("scope="), "{}", per_key.name);

        let r = row("pingora_rate").unwrap();
        let c = build(&setup(), r, &Args::default()).unwrap();
        assert_eq!(
            (c.args.u64("hashes"), c.args.u64("slots")),
            (Some(4), Some(1024))
        );
        assert_eq!(c.name, "pingora Rate docs 4x1024");
    }

    /// Every fixed default is a value its parameter accepts, so the
    /// builders may read it as given.
    #[test]
    fn fixed_defaults_fit_their_parameters() {
        let mut n = 0;
        for r in MODELS {
            for p in r.params {
                let Some(d) = p.default else { continue };
                n += 1;
                let ok = match (p.kind, d) {
                    (ParamType::Int { min, max }, Fixed::Int(v)) => (min..=max).contains(&v),
                    (ParamType::Bool, Fixed::Bool(_)) => true,
                    (ParamType::Choice(words), Fixed::Word(w)) => words.contains(&w),
                    _ => false,
                };
                assert!(ok, "{}.{}: {d:?}", r.model, p.name);
            }
        }
        assert!(n >= 10, "{n} defaults");
    }
}
