//! [`ReportBuilder`]: the one way to assemble an [`Output`].
//!
//! Every report has the same frame: a `report.json` that opens with the same
//! head (schema, scenario, kind, description, `look_at`, seed, runs, ratelab
//! version, see [`json_head`]), a `table.md` that opens with the scenario's
//! name as a heading and its description, a `table.csv`, charts, extra files
//! and the text `run` prints. The builder writes the frame; a kind adds its
//! own fields, prose, tables and charts in order.
//!
//! Chart policy: a chart that fails to render fails the report
//! ([`ReportBuilder::chart`] returns the error). A report that silently
//! lacked a chart would still pass for complete.

use super::chart::{render, ChartSpec};
use super::{Output, Table, SCHEMA};
use crate::error::Result;
use crate::scenario::Scenario;
use serde_json::{Map, Value};

/// How the `table.md` heading treats the scenario's description.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Heading {
    /// `# name`, a blank line, the description and a blank line, even when
    /// the description is empty.
    #[default]
    WithDescription,
    /// `# name` and a blank line; the description and a blank line only when
    /// there is one.
    DescriptionIfAny,
}

impl Heading {
    /// The heading of `scenario`'s `table.md`.
    pub fn render(self, scenario: &Scenario) -> String {
        let c = &scenario.common;
        if self == Heading::DescriptionIfAny && c.description.is_empty() {
            format!("# {}\n\n", c.name)
        } else {
            format!("# {}\n\n{}\n\n", c.name, c.description)
        }
    }
}

/// The common head of every report.json, in contract order: `schema`,
/// `scenario`, `kind`, `description`, `look_at` (when the scenario has
/// one), `seed`, `runs` (when given) and `ratelab_version`.
pub fn json_head(scenario: &Scenario, seed: u64, runs: Option<u32>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("schema".into(), SCHEMA.into());
    m.insert("scenario".into(), scenario.common.name.clone().into());
    m.insert("kind".into(), scenario.common.kind.clone().into());
    m.insert(
        "description".into(),
        scenario.common.description.clone().into(),
    );
    if let Some(look_at) = &scenario.common.look_at {
        m.insert("look_at".into(), look_at.clone().into());
    }
    m.insert("seed".into(), seed.into());
    if let Some(r) = runs {
        m.insert("runs".into(), r.into());
    }
    m.insert("ratelab_version".into(), env!("CARGO_PKG_VERSION").into());
    m
}

/// Assembles an [`Output`]: the report.json head and the table.md heading
/// come from the scenario; the kind appends the rest.
///
/// # Examples
///
/// ```
/// use ratelab::report::builder::ReportBuilder;
/// use ratelab::report::chart::{ChartSpec, Series, SeriesStyle};
/// use ratelab::report::Table;
/// use ratelab::scenario::Scenario;
///
/// let scenario = Scenario::parse(
///     std::path::Path::new("example.json"),
///     r#"{"name": "example", "kind": "demo", "description": "Two rows."}"#,
/// )
/// .unwrap();
/// let mut table = Table::new(["x", "y"]);
/// table.push(["1", "2"]);
/// let mut spec = ChartSpec::new("line", "A line", "x", "y");
/// spec.series.push(Series::new("y", vec![(0.0, 0.0), (1.0, 2.0)], SeriesStyle::Line));
///
/// let mut report = ReportBuilder::new(&scenario, 7, None);
/// report.field("rows", serde_json::json!([[1, 2]]));
/// report.md(&table.markdown());
/// report.csv(&table);
/// report.console(&table.text());
/// report.chart(&spec).unwrap();
/// let out = report.finish();
///
/// assert!(out.table_md.starts_with("# example\n\nTwo rows.\n\n| x | y |"));
/// assert_eq!(out.json["seed"], 7);
/// assert_eq!(out.json["rows"][0][1], 2);
/// assert_eq!(out.table_csv, "x,y\n1,2\n");
/// assert_eq!(out.charts[0].name, "line");
/// ```
#[derive(Debug)]
pub struct ReportBuilder<'a> {
    scenario: &'a Scenario,
    heading: Heading,
    json: Map<String, Value>,
    md: String,
    out: Output,
}

impl<'a> ReportBuilder<'a> {
    /// A report of `scenario` run with `seed` (and `runs`, for kinds that
    /// repeat): the report.json head is written, the table.md heading is
    /// [`Heading::WithDescription`].
    pub fn new(scenario: &'a Scenario, seed: u64, runs: Option<u32>) -> Self {
        Self {
            scenario,
            heading: Heading::default(),
            json: json_head(scenario, seed, runs),
            md: String::new(),
            out: Output::default(),
        }
    }

    /// Chooses how the table.md heading shows the description.
    pub fn heading(&mut self, heading: Heading) -> &mut Self {
        self.heading = heading;
        self
    }

    /// Adds a field to report.json, after the head and earlier fields (a
    /// field already there keeps its place and takes the new value).
    pub fn field(&mut self, key: &str, value: impl Into<Value>) -> &mut Self {
        self.json.insert(key.to_string(), value.into());
        self
    }

    /// Appends text to table.md (after the heading).
    pub fn md(&mut self, text: &str) -> &mut Self {
        self.md.push_str(text);
        self
    }

    /// Sets table.csv to `table`'s CSV.
    pub fn csv(&mut self, table: &Table) -> &mut Self {
        self.out.table_csv = table.csv();
        self
    }

    /// Appends text to what `run` prints.
    pub fn console(&mut self, text: &str) -> &mut Self {
        self.out.console.push_str(text);
        self
    }

    /// Appends text to what `run --wide` prints instead of the console
    /// text (a kind whose console table leaves columns out sets it to the
    /// whole table).
    pub fn console_wide(&mut self, text: &str) -> &mut Self {
        self.out.console_wide.push_str(text);
        self
    }

    /// Renders a chart and adds it (written as `<name>.svg` and
    /// `<name>.png`); a chart that fails to render is an error. Its caption
    /// goes to the `## Charts` list that [`ReportBuilder::finish`] appends to
    /// table.md (the review page's figure captions).
    pub fn chart(&mut self, spec: &ChartSpec) -> Result<&mut Self> {
        self.out.charts.push(render(spec)?);
        Ok(self)
    }

    /// Adds a chart rendered elsewhere (small multiples:
    /// [`crate::report::chart::render_grid`]), as [`ReportBuilder::chart`].
    pub fn rendered_chart(&mut self, chart: crate::report::Chart) -> &mut Self {
        self.out.charts.push(chart);
        self
    }

    /// Renders and adds every chart of `specs`, in order; the first failure
    /// is the error.
    pub fn charts<'s>(
        &mut self,
        specs: impl IntoIterator<Item = &'s ChartSpec>,
    ) -> Result<&mut Self> {
        for spec in specs {
            self.chart(spec)?;
        }
        Ok(self)
    }

    /// Adds a file of the report folder besides the standard ones (e.g. a
    /// timeline CSV).
    pub fn extra_file(&mut self, name: &str, bytes: Vec<u8>) -> &mut Self {
        self.out.extra_files.push((name.to_string(), bytes));
        self
    }

    /// The scenario the report is of.
    pub fn scenario(&self) -> &'a Scenario {
        self.scenario
    }

    /// The finished [`Output`].
    pub fn finish(self) -> Output {
        let mut out = self.out;
        let mut md = self.md;
        let captioned: Vec<&crate::report::Chart> = out
            .charts
            .iter()
            .filter(|c| !c.caption.is_empty())
            .collect();
        if !captioned.is_empty() {
            if !md.is_empty() && !md.ends_with("\n\n") {
                md.push('\n');
            }
            md.push_str("## Charts\n\n");
            for c in captioned {
                md.push_str(&format!("- `{}`: {}\n", c.name, c.caption));
            }
        }
        out.table_md = self.heading.render(self.scenario) + &md;
        out.json = Value::Object(self.json);
        out
    }
}
