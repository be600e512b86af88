//! What a chart is made of: its series, bands, axes' options and legend
//! corner ([`ChartSpec`]), as the labs describe it before it is drawn.

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesStyle {
    /// A polyline through the points.
    Line,
    /// A dashed polyline.
    Dashed,
    /// Markers only (discrete x values).
    Points,
    /// A polyline with markers.
    LinePoints,
    /// A staircase: each value holds until the next x.
    Step,
}

/// One labelled series.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend label (empty: not in the legend).
    pub label: String,
    /// (x, y) in data units.
    pub points: Vec<(f64, f64)>,
    /// How to draw it.
    pub style: SeriesStyle,
    /// Optional text next to each point (same length as `points`; empty
    /// strings draw nothing).
    pub point_labels: Option<Vec<String>>,
    /// Palette index request (to keep a colour per algorithm across charts).
    /// A colour an earlier series took moves to a free one unless
    /// `share_color` is set.
    pub color: Option<usize>,
    /// Keep the requested colour even if an earlier series has it (a
    /// measurement and its ideal, say); the dash pattern then differs.
    pub share_color: bool,
    /// Draw the line dashed, whatever the style ([`SeriesStyle::Step`] or
    /// [`SeriesStyle::LinePoints`] too): the second of a pair (count_min
    /// solid, conservative dashed) keeps its shape's colour and its
    /// style's geometry.
    pub dashed: bool,
    /// With `share_color`: the marker of the latest series of that colour
    /// (a family's loose points beside its line) instead of the next one.
    pub same_marker: bool,
    /// Which of its points lie beyond the axis' range, pinned at its edge
    /// (empty: none): each is drawn as an arrow pointing off the axis (its
    /// label gives the value), not as a marker that would read as a value
    /// at the edge.
    pub at_edge: Vec<bool>,
}

impl Series {
    /// A series drawn with `style`.
    pub fn new(label: impl Into<String>, points: Vec<(f64, f64)>, style: SeriesStyle) -> Self {
        Self {
            label: label.into(),
            points,
            style,
            point_labels: None,
            color: None,
            share_color: false,
            dashed: false,
            same_marker: false,
            at_edge: Vec::new(),
        }
    }

    /// The same series with palette colour `color`.
    pub fn color(mut self, color: usize) -> Self {
        self.color = Some(color);
        self
    }
}

/// A shaded area between two curves (e.g. a ±1σ band), drawn under the
/// series and named in the legend.
#[derive(Debug, Clone)]
pub struct Band {
    /// Legend label.
    pub label: String,
    /// Lower edge, (x, y) in data units.
    pub lower: Vec<(f64, f64)>,
    /// Upper edge, same x values as `lower`.
    pub upper: Vec<(f64, f64)>,
    /// Palette index.
    pub color: usize,
    /// Fill opacity (0..1).
    pub opacity: f64,
    /// The label of the series this band belongs to (a mean's spread):
    /// its legend entry comes right after that series' entry instead of
    /// after every series. Empty: with the other bands, at the end.
    pub follows: String,
}

impl Band {
    /// A band of palette colour `color` at opacity 0.25.
    pub fn new(
        label: impl Into<String>,
        lower: Vec<(f64, f64)>,
        upper: Vec<(f64, f64)>,
        color: usize,
    ) -> Self {
        Self {
            label: label.into(),
            lower,
            upper,
            color,
            opacity: 0.25,
            follows: String::new(),
        }
    }
}

/// Which corner the legend tries first when it goes inside the plot (it
/// goes there only if that corner is free of data; otherwise another free
/// corner, else outside the plot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Legend {
    /// Top right.
    UpperRight,
    /// Top left.
    UpperLeft,
    /// Bottom right.
    LowerRight,
    /// Bottom left.
    LowerLeft,
}

/// A chart to render.
#[derive(Debug, Clone)]
pub struct ChartSpec {
    /// File stem (`<name>.svg`, `<name>.png`).
    pub name: String,
    /// Title shown above the plot.
    pub title: String,
    /// What the chart shows, in a sentence or two (the review page's
    /// caption; [`crate::report::ReportBuilder::chart`] lists it in table.md).
    pub caption: String,
    /// X axis label, with units.
    pub x_label: String,
    /// Y axis label, with units.
    pub y_label: String,
    /// Log-scale x.
    pub x_log: bool,
    /// Log-scale y.
    pub y_log: bool,
    /// With [`ChartSpec::x_log`]: a log₂ axis for a parameter that
    /// doubles (bursts 25, 50, …, 400): ticks at doubling steps (the data's
    /// own values when they double, else powers of two), so a doubling
    /// sweep is evenly spaced and says so on its ticks.
    pub x_log2: bool,
    /// The same for y, with [`ChartSpec::y_log`]: on log₂ axes both ways a
    /// proportional law is a straight line of slope 1.
    pub y_log2: bool,
    /// X is a percentile (0..100) on a 1/(1−p) log axis (HdrHistogram's
    /// percentile plots): 0%, 90%, 99%, 99.9%, ... equally spaced.
    pub x_percentile: bool,
    /// On log axes: positive values below this count as zero (drawn on the
    /// zero row, labelled "<floor"); values at or below zero always do.
    pub log_floor: f64,
    /// The series.
    pub series: Vec<Series>,
    /// Shaded bands, drawn under the series.
    pub bands: Vec<Band>,
    /// Vertical marker lines (x, label); labels sit above the plot.
    pub vlines: Vec<(f64, String)>,
    /// Force the y range (data units).
    pub y_range: Option<(f64, f64)>,
    /// Force the x range (data units).
    pub x_range: Option<(f64, f64)>,
    /// The corner the legend tries first.
    pub legend: Legend,
    /// Categories on x: a point's x is the index of its category (ticks at
    /// 0, 1, 2, … labelled with these), for things that are not numbers on
    /// a scale (thread counts, lanes). Empty: a numeric axis.
    pub x_categories: Vec<String>,
    /// Categories on y, as [`ChartSpec::x_categories`] (a dot plot's rows).
    pub y_categories: Vec<String>,
    /// Why the data may fill little of the x axis (a range shared with
    /// other panels, a reference that must show): written on the plot
    /// area as `data-axis-note-x` for the layout test. Empty: none.
    pub x_note: String,
    /// The same for the y axis (`data-axis-note-y`).
    pub y_note: String,
    /// A labelled row under a linear y axis for points that have no value
    /// on it (y = −∞): refused requests on a chart of waits, say, which
    /// must not read as "waited 0". Empty: such points are not drawn.
    pub y_row_below: String,
    /// The canvas (px) when not the standard [`super::SIZE`]: a compact
    /// one for a chart of a few values (a strip of two rows, a handful of
    /// dots), so they are not lost on a full canvas. None: the standard.
    pub size: Option<(u32, u32)>,
}

impl ChartSpec {
    /// A linear-axes chart with no series yet.
    pub fn new(
        name: impl Into<String>,
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            title: title.into(),
            caption: String::new(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_log: false,
            y_log: false,
            x_log2: false,
            y_log2: false,
            x_percentile: false,
            log_floor: 0.0,
            series: Vec::new(),
            bands: Vec::new(),
            vlines: Vec::new(),
            y_range: None,
            x_range: None,
            legend: Legend::UpperRight,
            x_categories: Vec::new(),
            y_categories: Vec::new(),
            x_note: String::new(),
            y_note: String::new(),
            y_row_below: String::new(),
            size: None,
        }
    }

    /// The same chart with both axes logarithmic; positive values below
    /// `floor` count as zero (the zero row).
    pub fn log_log(mut self, floor: f64) -> Self {
        self.x_log = true;
        self.y_log = true;
        self.log_floor = floor;
        self
    }

    /// The same chart with `caption`.
    pub fn caption(mut self, caption: impl Into<String>) -> Self {
        self.caption = caption.into();
        self
    }
}
