//! Which family a candidate is in, its colour on every chart, and what
//! it sweeps: read from its model, arguments and scope, never its label.

use super::*;

/// The candidates' families in order of first appearance.
pub(super) fn families(cands: &[Candidate]) -> Vec<&str> {
    let mut fams: Vec<&str> = Vec::new();
    for cd in cands {
        if !fams.contains(&cd.family.as_str()) {
            fams.push(&cd.family);
        }
    }
    fams
}

/// The palette colour of the family of candidate `i`: its family's place
/// among the scenario's families, so a family keeps its colour on every
/// chart of the report. Black and grey (6, 7) are left to the exact
/// limiter and the policy. A fleet's charts (candidates of no model row)
/// keep colouring by line, `line`.
pub(super) fn family_color(cands: &[Candidate], i: usize, line: usize) -> usize {
    const FREE: [usize; 6] = [0, 1, 2, 3, 4, 5];
    if cands.iter().any(|c| c.model.is_empty()) {
        return line;
    }
    let fams = families(cands);
    let at = fams.iter().position(|f| *f == cands[i].family).unwrap_or(0);
    FREE[at % FREE.len()]
}

/// The per-key families' first candidates (the global ones limit no key:
/// their picture is the table's), in order.
pub(super) fn picks(cands: &[Candidate], fams: &[&str]) -> Vec<usize> {
    fams.iter()
        .filter_map(|fam| cands.iter().position(|cd| cd.family == *fam))
        .filter(|&i| cands[i].scope == Scope::PerKey)
        .collect()
}

/// A candidate's burst when its family sweeps it: the `burst` argument,
/// when it came from a list.
pub(super) fn burst_of(cd: &Candidate) -> Option<u64> {
    cd.args
        .varies("burst")
        .then(|| cd.args.u64("burst"))
        .flatten()
}

/// Whether `fam` is a sweep over bursts: several members, each with its
/// burst.
pub(super) fn burst_family(cands: &[Candidate], fam: &str) -> bool {
    let members: Vec<&Candidate> = cands.iter().filter(|c| c.family == fam).collect();
    members.len() > 1 && members.iter().all(|c| burst_of(c).is_some())
}
