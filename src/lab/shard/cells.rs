//! A sweep's cells as shard files carry them: each cell's raw outcome
//! (floats as IEEE-754 bits), checked when read back and put back in cell
//! order by `merge`.

use super::Shard;
use crate::error::{Error, Result};
use crate::lab::estimator_accuracy::{self, CellOutcome, QUANTILES};
use crate::metrics::ErrorStats;
use crate::model::estimator::Fault;
use crate::workload::counts::WorkloadSummary;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One cell's outcome; every float as its IEEE-754 bits.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CellRecord {
    cell: usize,
    keys: u64,
    exact_pct: u64,
    mean: u64,
    p99: u64,
    max: u64,
    over_bound_pct: u64,
    bound: u64,
    summary: WorkloadSummary,
    fault: Option<Fault>,
    rank_bin_means: Vec<u64>,
    quantiles: Vec<u64>,
}

impl CellRecord {
    pub(super) fn new(cell: usize, o: &CellOutcome) -> Self {
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect();
        Self {
            cell,
            keys: o.stats.keys,
            exact_pct: o.stats.exact_pct.to_bits(),
            mean: o.stats.mean.to_bits(),
            p99: o.stats.p99.to_bits(),
            max: o.stats.max.to_bits(),
            over_bound_pct: o.stats.over_bound_pct.to_bits(),
            bound: o.bound.to_bits(),
            summary: o.summary,
            fault: o.fault.clone(),
            rank_bin_means: bits(&o.rank_bin_means),
            quantiles: bits(&o.quantiles),
        }
    }

    /// Refuses a cell no run can produce: no keys, a non-finite or
    /// negative figure, a percentage over 100, rank bins that do not match
    /// its keys.
    pub(super) fn validate(&self, path: &Path) -> Result<()> {
        let bad = |what: String| Err(Error::input_at(path, format!("cell {}", self.cell), what));
        if self.keys == 0 {
            return bad("keys 0: a cell measures at least one key".into());
        }
        let f = f64::from_bits;
        for (name, v) in [
            ("exact_pct", f(self.exact_pct)),
            ("mean", f(self.mean)),
            ("p99", f(self.p99)),
            ("max", f(self.max)),
            ("over_bound_pct", f(self.over_bound_pct)),
            ("bound", f(self.bound)),
        ] {
            let pct = name.ends_with("_pct");
            if !v.is_finite() || v < 0.0 || (pct && v > 100.0) {
                return bad(format!(
                    "{name} {v}: expected a finite value >= 0{}",
                    if pct { " and <= 100" } else { "" }
                ));
            }
        }
        if let Some(b) = self
            .rank_bin_means
            .iter()
            .chain(&self.quantiles)
            .map(|&b| f(b))
            .find(|v| !v.is_finite())
        {
            return bad(format!(
                "{b} in rank_bin_means or quantiles: expected finite values"
            ));
        }
        let bins = estimator_accuracy::rank_bins(self.keys.min(1 << 40) as usize).len();
        if self.rank_bin_means.len() != bins {
            return bad(format!(
                "{} rank bins: expected {bins} for {} keys",
                self.rank_bin_means.len(),
                self.keys
            ));
        }
        Ok(())
    }

    fn outcome(&self) -> CellOutcome {
        let f = f64::from_bits;
        CellOutcome {
            stats: ErrorStats {
                keys: self.keys,
                exact_pct: f(self.exact_pct),
                mean: f(self.mean),
                p99: f(self.p99),
                max: f(self.max),
                over_bound_pct: f(self.over_bound_pct),
            },
            bound: f(self.bound),
            summary: self.summary,
            fault: self.fault.clone(),
            rank_bin_means: self.rank_bin_means.iter().map(|&b| f(b)).collect(),
            quantiles: self.quantiles.iter().map(|&b| f(b)).collect(),
        }
    }
}

/// Every cell of the shards, checked (each in its own shard, once, with the
/// right number of quantiles) and put back in cell order.
pub(super) fn collect_cells(
    shards: &[(PathBuf, super::ShardFile)],
    n: u32,
    scenario: &str,
) -> Result<Vec<CellOutcome>> {
    // Cells 0..total, each once: an index past the number of cells given
    // is refused before anything is allocated from it.
    let total: usize = shards.iter().map(|(_, f)| f.cells.len()).sum();
    let mut cells: Vec<Option<CellOutcome>> = Vec::new();
    for (path, f) in shards {
        for c in &f.cells {
            if c.cell >= total {
                return Err(Error::input_at(
                    path,
                    format!("cell {}", c.cell),
                    format!("index past the {total} cells of the shards"),
                ));
            }
            let shard = Shard {
                index: f.shard,
                count: n,
            };
            if !shard.owns(c.cell) {
                return Err(Error::input_at(
                    path,
                    format!("cell {}", c.cell),
                    format!(
                        "belongs to shard {} of {n}, not {}",
                        c.cell % n as usize,
                        f.shard
                    ),
                ));
            }
            if c.quantiles.len() != QUANTILES + 1 {
                return Err(Error::input_at(
                    path,
                    format!("cell {}", c.cell),
                    format!(
                        "{} quantiles: expected {}",
                        c.quantiles.len(),
                        QUANTILES + 1
                    ),
                ));
            }
            if cells.len() <= c.cell {
                cells.resize_with(c.cell + 1, || None);
            }
            if cells[c.cell].replace(c.outcome()).is_some() {
                return Err(Error::input_at(
                    path,
                    format!("cell {}", c.cell),
                    "given twice",
                ));
            }
        }
    }
    cells
        .into_iter()
        .enumerate()
        .map(|(k, o)| o.ok_or_else(|| Error::input(format!("{scenario}: cell {k} is in no shard"))))
        .collect()
}
