//! `merge` of a decision scenario's shards: the per-key tallies put back
//! in the unsharded run's key order and rendered as one report.

use super::*;
use crate::lab::error::LabError;

/// Merges the parts of shards `0..n` (in shard order, each once, of one
/// identity: the caller checked) into the unsharded run's report.
pub(crate) fn merge(
    scenario: &Scenario,
    seed: u64,
    shards: &[ShardRef],
    n: u32,
    max_memory: u64,
) -> Result<Output> {
    let bad = |path: &Path, field: &str, what: String| {
        Error::input_at(path, format!("field decision.{field}"), what)
    };
    let (path0, _, head) = shards[0];
    let p: Params = scenario.params()?;
    let per_key = head.candidates.iter().filter(|c| !c.shared).count();
    let shared_count = head.candidates.len() - per_key;
    let dir = head.parts.is_some();
    for &(path, idx, d) in shards {
        if d.parts.is_some() != dir {
            return Err(bad(
                path,
                "parts",
                format!(
                    "{}: shards of a directory trace read by partition and of a trace split by key cannot be merged",
                    if dir { "missing" } else { "given" }
                ),
            ));
        }
        if let (Some(a), Some(b)) = (&d.parts, &head.parts)
            && (a.files != b.files || a.shard_of != b.shard_of)
        {
            return Err(bad(
                path,
                "parts.files",
                format!(
                    "differ from those of {}: shards of different directories (or file lists) cannot be merged",
                    path0.display()
                ),
            ));
        }
        if let Some(pr) = &d.parts
            && pr.all != d.shared.is_some()
        {
            return Err(bad(
                path,
                "parts.all",
                "a shard reads every partition exactly when it holds a shared-state candidate"
                    .into(),
            ));
        }
        if let Some(pr) = &d.parts
            && (pr.files.len() != pr.shard_of.len() || pr.shard_of.iter().any(|&s| s >= n))
        {
            return Err(bad(
                path,
                "parts.shard_of",
                format!("expected a shard below {n} per file"),
            ));
        }
        // A directory's shards each count their own files' requests.
        let totals_differ =
            (d.requests, d.weight, d.duration_ns) != (head.requests, head.weight, head.duration_ns);
        if (totals_differ && !dir) || d.note != head.note {
            return Err(bad(path, "requests", format!(
                "{} requests of weight {} over {} ns; {} read {}, {}, {}: shards of different traces cannot be merged",
                d.requests, d.weight, d.duration_ns, path0.display(), head.requests, head.weight, head.duration_ns
            )));
        }
        let label = |c: &CandidateRecord| (c.name.clone(), c.family.clone(), c.shared);
        if d.candidates
            .iter()
            .map(label)
            .ne(head.candidates.iter().map(label))
        {
            return Err(bad(
                path,
                "candidates",
                format!("differ from those of {}", path0.display()),
            ));
        }
        let k = &d.keys;
        if !k.consistent() || dir == k.file.is_empty() && !k.order.is_empty() {
            return Err(bad(path, "keys", "columns of different lengths".into()));
        }
        if d.tallies.len() != 2 + per_key {
            return Err(bad(
                path,
                "tallies",
                format!(
                    "{} tallies: expected {} (two exact limiters and {per_key} per-key candidates)",
                    d.tallies.len(),
                    2 + per_key
                ),
            ));
        }
        if d.offered.len() != BINS as usize || d.offered_onset.len() != ONSET_BINS as usize {
            return Err(bad(
                path,
                "offered",
                format!("expected {BINS} and {ONSET_BINS} bins"),
            ));
        }
        if d.shared.is_some() != (0..shared_count).any(|c| holder(c, n) == idx) {
            return Err(bad(
                path,
                "shared",
                format!(
                    "shared-state candidate c's tallies belong on shard c mod {n}: {}",
                    if d.shared.is_some() {
                        "this shard holds none"
                    } else {
                        "missing"
                    }
                ),
            ));
        }
        if let Some(pr) = &d.parts {
            // Each key in one of this shard's own files.
            if let Some(i) =
                (0..k.file.len()).find(|&i| pr.shard_of.get(k.file[i] as usize) != Some(&idx))
            {
                return Err(bad(
                    path,
                    "keys",
                    format!(
                        "key {:?} is from file {}, not one of shard {idx}'s",
                        k.name[i], k.file[i]
                    ),
                ));
            }
        } else if let Some(name) = k.name.iter().find(|name| {
            !Shard {
                index: idx,
                count: n,
            }
            .owns_key(name)
        }) {
            return Err(bad(
                path,
                "keys",
                format!(
                    "key {name:?} belongs to shard {} of {n}, not {idx}",
                    crate::lab::shard::part::key_shard(name, n)
                ),
            ));
        }
    }
    // What the merged per-key state takes, before any is built: a
    // 24-byte record per key and tally, the key's string and its entries
    // in the sort, the id maps and the name check.
    let keys: usize = shards.iter().map(|(_, _, d)| d.keys.order.len()).sum();
    let name_bytes: usize = shards
        .iter()
        .flat_map(|(_, _, d)| d.keys.name.iter().map(String::len))
        .sum();
    let rows = head.candidates.len() + 2;
    let need = keys as f64 * (24.0 * rows as f64 + 112.0) + name_bytes as f64;
    if need > max_memory as f64 {
        return Err(Error::input(format!(
            "{}: merging {keys} keys x {rows} tallies needs about {}, over the memory cap of {} (raise it with merge --max-memory)",
            scenario.common.name,
            crate::report::fmt::bytes_human(need as u64),
            crate::report::fmt::bytes_human(max_memory)
        )));
    }
    // The traffic totals: a directory's shards' sums (or those of a shard
    // that read every file).
    let (requests, weight, duration_ns) = match shards
        .iter()
        .find(|(_, _, d)| d.parts.as_ref().is_some_and(|p| p.all))
    {
        _ if !dir => (head.requests, head.weight, head.duration_ns),
        Some((_, _, d)) => (d.requests, d.weight, d.duration_ns),
        None => shards.iter().fold((0u64, 0u64, 0), |(r, w, t), (_, _, d)| {
            (
                r.saturating_add(d.requests),
                w.saturating_add(d.weight),
                t.max(d.duration_ns),
            )
        }),
    };
    // Every key once, back in stream order: the unsharded run's ids.
    let mut all: Vec<((u64, u32, u64), usize, usize)> = Vec::with_capacity(keys);
    for (si, &(_, _, d)) in shards.iter().enumerate() {
        all.extend((0..d.keys.order.len()).map(|i| (d.keys.place(i), si, i)));
    }
    all.sort_unstable();
    if dir {
        // A key in two shards' files: in two partitions.
        let mut by_name: Vec<(&str, usize, usize)> = all
            .iter()
            .map(|&(_, si, i)| (shards[si].2.keys.name[i].as_str(), si, i))
            .collect();
        by_name.sort_unstable();
        if let Some(w) = by_name.windows(2).find(|w| w[0].0 == w[1].0) {
            let file = |(_, si, i): (&str, usize, usize)| {
                let d = shards[si].2;
                let f = d.keys.file[i] as usize;
                let name = d.parts.as_ref().and_then(|p| p.files.get(f)).cloned();
                format!("{} (shard {})", name.unwrap_or_default(), shards[si].1)
            };
            return Err(bad(
                shards[w[1].1].0,
                "keys",
                format!(
                    "key {:?} is in two partitions: {} and {}: a shard reads only its partitions, so a key must stay in one (partition by a hash of the key)",
                    w[0].0,
                    file(w[0]),
                    file(w[1])
                ),
            ));
        }
    }
    for w in all.windows(2) {
        if w[0].0 == w[1].0 {
            let (path, _, d) = shards[w[1].1];
            return Err(bad(
                path,
                "keys",
                format!(
                    "key {:?} is at stream position {:?}, as another key of {}",
                    d.keys.name[w[1].2],
                    w[1].0,
                    shards[w[0].1].0.display()
                ),
            ));
        }
    }
    let mut ids: Vec<Vec<u32>> = shards
        .iter()
        .map(|(_, _, d)| vec![0; d.keys.order.len()])
        .collect();
    let mut names = Vec::with_capacity(all.len());
    let mut per_key_requests = Vec::with_capacity(all.len());
    let mut seen_names = std::collections::HashSet::with_capacity(all.len());
    for (dense, &(_, si, i)) in all.iter().enumerate() {
        let d = shards[si].2;
        ids[si][i] = dense as u32;
        if !seen_names.insert(d.keys.name[i].as_str()) {
            return Err(bad(
                shards[si].0,
                "keys",
                format!("key {:?} given twice", d.keys.name[i]),
            ));
        }
        names.push(d.keys.name[i].clone());
        per_key_requests.push(d.keys.requests[i]);
    }
    drop(seen_names);
    let total: u64 = per_key_requests.iter().map(|&r| u64::from(r)).sum();
    if total != requests && !per_key_requests.contains(&u32::MAX) {
        return Err(bad(
            path0,
            "keys",
            format!(
                "the shards' keys have {total} requests, not the {requests} read: a shard is missing keys",
            ),
        ));
    }
    // The tallies: sums and maxima over the shards.
    let fresh = || Tally::with_bins(BINS as usize, ONSET_BINS as usize);
    let mut oracle = fresh();
    let mut fixed = Tally::default();
    let mut tallies: Vec<Tally> = head.candidates.iter().map(|_| fresh()).collect();
    let mut memory = vec![0u64; head.candidates.len()];
    let per_key_at: Vec<usize> = (0..head.candidates.len())
        .filter(|&i| !head.candidates[i].shared)
        .collect();
    let absorb = |t: &mut Tally, part: &TallyPart, ids: &[u32], path: &Path, who: &str| {
        t.absorb(part, ids)
            .map_err(|m| bad(path, "tallies", format!("{who}: {m}")))
    };
    let mut offered = vec![0u64; BINS as usize];
    let mut offered_onset = vec![0u64; ONSET_BINS as usize];
    let mut watched: Option<(&Path, &str)> = None;
    for (si, &(path, _, d)) in shards.iter().enumerate() {
        absorb(
            &mut oracle,
            &d.tallies[0],
            &ids[si],
            path,
            "the exact sliding log",
        )?;
        absorb(
            &mut fixed,
            &d.tallies[1],
            &ids[si],
            path,
            "the exact aligned window",
        )?;
        for (&c, part) in per_key_at.iter().zip(&d.tallies[2..]) {
            absorb(
                &mut tallies[c],
                part,
                &ids[si],
                path,
                &head.candidates[c].name,
            )?;
            memory[c] = memory[c].saturating_add(d.candidates[c].memory_bytes);
        }
        for (a, b) in offered.iter_mut().zip(&d.offered) {
            *a = a.saturating_add(*b);
        }
        for (a, b) in offered_onset.iter_mut().zip(&d.offered_onset) {
            *a = a.saturating_add(*b);
        }
        if let Some(w) = &d.watched {
            if let Some((other, _)) = watched {
                return Err(bad(
                    path,
                    "watched",
                    format!(
                        "also given by {}: one shard owns the watched key",
                        other.display()
                    ),
                ));
            }
            watched = Some((path, w));
        }
    }
    for &(path, idx, d) in shards {
        if let Some(s) = &d.shared {
            shared_tallies(s, &all, shards, (idx, n, d), &mut tallies, &mut memory)
                .map_err(|m| bad(path, "shared", m.to_string()))?;
        }
    }
    let expect_watch = p.watch.is_some()
        || p.workload
            .as_ref()
            .is_some_and(|w| find_flash(w, 0).is_some());
    if expect_watch != watched.is_some() {
        return Err(bad(
            path0,
            "watched",
            format!(
                "{}: the scenario {} a watched key",
                match watched {
                    Some((path, _)) => format!("given by {}", path.display()),
                    None => "given by no shard".into(),
                },
                if expect_watch { "has" } else { "has no" }
            ),
        ));
    }
    let watch_id = watched.map(|(_, w)| match names.iter().position(|n| n == w) {
        Some(i) => i as u32,
        None => {
            // A workload's flash key without a request: named, no requests.
            names.push(w.to_string());
            (names.len() - 1) as u32
        }
    });
    let ctx = RunContext {
        seed,
        ..RunContext::for_scenario(scenario)
    };
    let source = Source::Merged {
        names,
        note: head.note.clone(),
    };
    let mut lab = Lab::new(std::sync::Arc::new(p), source, head.candidates.len());
    lab.tallies = tallies;
    lab.oracle = oracle;
    lab.fixed_oracle = fixed;
    lab.offered = offered;
    lab.offered_onset = offered_onset;
    lab.requests = requests;
    lab.weight_total = weight;
    lab.per_key_requests = per_key_requests;
    lab.duration_ns = duration_ns;
    lab.origin.set(head.origin_ns);
    lab.watch_id = watch_id;
    let cands: Vec<Candidate> = head
        .candidates
        .iter()
        .zip(&memory)
        .map(|(c, &m)| Candidate {
            name: c.name.clone(),
            family: c.family.clone(),
            model: c.model.clone(),
            args: c.args.clone(),
            scope: c.scope,
            limiter: Box::new(Recorded(m)),
        })
        .collect();
    let mut out = render::output(scenario, &ctx, &lab, &cands)?;
    out.json["schema"] = crate::report::SCHEMA.into();
    Ok(out)
}

/// The shared-state candidates of shard `idx` of `n` (those it holds):
/// their keys are every key, the same as the shards' together (same
/// places, same requests).
fn shared_tallies(
    s: &SharedPart,
    all: &[((u64, u32, u64), usize, usize)],
    shards: &[ShardRef],
    (idx, n, head): (u32, u32, &DecisionPart),
    tallies: &mut [Tally],
    memory: &mut [u64],
) -> std::result::Result<(), LabError> {
    let k = &s.keys;
    if !k.consistent() {
        return Err(LabError::PartMismatch(
            "keys: columns of different lengths".into(),
        ));
    }
    if k.order.len() != all.len() {
        return Err(LabError::PartMismatch(format!(
            "{} keys, but the shards have {} together",
            k.order.len(),
            all.len()
        )));
    }
    let mut by_order: Vec<usize> = (0..k.order.len()).collect();
    by_order.sort_unstable_by_key(|&i| k.place(i));
    let mut ids = vec![0u32; k.order.len()];
    for (dense, (&i, &(o, si, j))) in by_order.iter().zip(all).enumerate() {
        let d = shards[si].2;
        if k.place(i) != o || k.name[i] != d.keys.name[j] || k.requests[i] != d.keys.requests[j] {
            return Err(LabError::PartMismatch(format!(
                "key {:?} ({} requests) where the shards have {:?} ({} requests)",
                k.name[i], k.requests[i], d.keys.name[j], d.keys.requests[j]
            )));
        }
        ids[i] = dense as u32;
    }
    let at: Vec<usize> = (0..head.candidates.len())
        .filter(|&i| head.candidates[i].shared)
        .enumerate()
        .filter(|&(c, _)| holder(c, n) == idx)
        .map(|(_, i)| i)
        .collect();
    if s.tallies.len() != at.len() {
        return Err(LabError::PartMismatch(format!(
            "{} tallies for {} shared-state candidates",
            s.tallies.len(),
            at.len()
        )));
    }
    for (&c, part) in at.iter().zip(&s.tallies) {
        tallies[c]
            .absorb(part, &ids)
            .map_err(|m| LabError::Candidate {
                candidate: head.candidates[c].name.clone(),
                source: Box::new(m),
            })?;
        memory[c] = head.candidates[c].memory_bytes;
    }
    Ok(())
}
