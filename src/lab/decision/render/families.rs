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

/// How a family is drawn on every chart of a report: its palette colour
/// and its marker (an index into the chart style's markers), both kept
/// whatever series a chart draws before it (a family past the sixth
/// repeats a colour; its marker tells it apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FamilyLook {
    pub(super) color: usize,
    pub(super) marker: usize,
}

impl FamilyLook {
    /// `s` drawn in this look.
    pub(super) fn dress(self, s: &mut Series) {
        s.color = Some(self.color);
        s.marker = Some(self.marker);
        // The family's colour even where an earlier series has it (a
        // family of the same colour, or the same family's other line).
        s.share_color = true;
    }
}

/// Colours a family may take: black and grey (6, 7) are left to the
/// exact limiter and the policy.
const FAMILY_COLORS: usize = 6;
/// Markers in the chart style ([`crate::report::chart::style::MARKERS`]).
const FAMILY_MARKERS: usize = 5;

/// The look of the `at`-th family: colour and marker both cycle (six
/// colours, five markers), so no two of the first thirty share both.
pub(super) fn look_at(at: usize) -> FamilyLook {
    FamilyLook {
        color: at % FAMILY_COLORS,
        marker: at % FAMILY_MARKERS,
    }
}

/// The colour of candidate `i`'s line on the watched-key charts: its
/// family's, as on the harm charts ([`look_at`] of the family's place);
/// for a fleet (no model of its own) its place among the lines (`line`),
/// since a fleet's balancers share a strategy's colour and are told apart
/// on one panel.
pub(super) fn family_color(cands: &[Candidate], i: usize, line: usize) -> usize {
    if cands.iter().any(|c| c.model.is_empty()) {
        return line;
    }
    let fams = families(cands);
    let at = fams.iter().position(|f| *f == cands[i].family).unwrap_or(0);
    look_at(at).color
}

/// What a candidate is coloured by: its family, or for a fleet
/// (`fleet`) its strategy without its swept settings (`central envoy
/// ratelimit redis` of `central envoy ratelimit redis local_cache=true
/// x16 round_robin`), so that fleets of one strategy share a colour
/// whatever their balancer, replica count or setting.
pub(super) fn colour_key(cd: &Candidate, fleet: bool) -> String {
    if !fleet {
        return cd.family.clone();
    }
    strategy_kind(&fleet_strategy(&cd.name, &cd.family))
}

/// A fleet's strategy label from its name (`{strategy} x{n} {balancer}`)
/// and family (`{strategy} {balancer}`): the words before the replica
/// count the family does not hold; the family when no word fits.
pub(super) fn fleet_strategy(name: &str, family: &str) -> String {
    let words: Vec<&str> = name.split(' ').collect();
    for (i, w) in words.iter().enumerate() {
        let count = w
            .strip_prefix('x')
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if !count {
            continue;
        }
        let rest: Vec<&str> = words[..i].iter().chain(&words[i + 1..]).copied().collect();
        if rest.join(" ") == family {
            return words[..i].join(" ");
        }
    }
    family.to_string()
}

/// A strategy label without its `key=value` settings.
pub(super) fn strategy_kind(label: &str) -> String {
    label
        .split(' ')
        .filter(|w| !w.contains('='))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Each candidate's look: its colour key's place among the scenario's
/// (in order of first appearance).
pub(super) fn family_looks(lab: &Lab, cands: &[Candidate]) -> Vec<FamilyLook> {
    let fleet = lab.p.deployment.is_some();
    let keys: Vec<String> = cands.iter().map(|c| colour_key(c, fleet)).collect();
    let mut order: Vec<&str> = Vec::new();
    for k in &keys {
        if !order.contains(&k.as_str()) {
            order.push(k);
        }
    }
    keys.iter()
        .map(|k| look_at(order.iter().position(|o| o == k).unwrap_or(0)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fleets_strategy_is_read_from_its_name_and_family() {
        let name = "central envoy ratelimit redis local_cache=true x16 round_robin";
        let fam = "central envoy ratelimit redis local_cache=true round_robin";
        let s = fleet_strategy(name, fam);
        assert_eq!(s, "central envoy ratelimit redis local_cache=true");
        assert_eq!(strategy_kind(&s), "central envoy ratelimit redis");
        // A balancer with words of its own, and a label holding an `x`.
        assert_eq!(
            fleet_strategy(
                "local x/time/rate per key x8 sticky 5 s",
                "local x/time/rate per key sticky 5 s"
            ),
            "local x/time/rate per key"
        );
        // Not a fleet's name: the family.
        assert_eq!(fleet_strategy("a x2", "a x2"), "a x2");
    }

    #[test]
    fn thirty_families_have_thirty_looks_and_the_first_six_their_own_colour() {
        let looks: Vec<FamilyLook> = (0..30).map(look_at).collect();
        for (i, a) in looks.iter().enumerate() {
            for b in &looks[..i] {
                assert!((a.color, a.marker) != (b.color, b.marker), "{a:?} {b:?}");
            }
        }
        let first: Vec<usize> = looks[..6].iter().map(|l| l.color).collect();
        assert_eq!(first, [0, 1, 2, 3, 4, 5]);
        assert!(looks.iter().all(|l| l.color < 6), "black and grey are kept");
    }
}
