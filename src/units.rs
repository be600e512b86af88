//! Quantities a user writes on the command line or in a scenario: memory
//! sizes (`512MiB`) and work budgets (`3e10`). Below the CLI, so a
//! scenario kind parses them the same way a flag does.

/// Parses sizes such as `1GiB`, `512MiB`, `64KiB`, `1000` (bytes).
pub fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?}: expected a size like 1GiB, 512MiB or 4096"))?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" | "K" | "k" => 1 << 10,
        "MiB" | "M" => 1 << 20,
        "GiB" | "G" => 1 << 30,
        "TiB" | "T" => 1 << 40,
        u => {
            return Err(format!(
                "{s:?}: unknown unit {u:?} (use B, KiB, MiB, GiB, TiB)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?}: too large"))
}

/// Parses `--max-work`: a positive number of steps such as 1e10 or 250000000.
pub fn parse_work(s: &str) -> std::result::Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 1.0 => Ok(v),
        _ => Err(format!("{s:?}: expected a number of steps >= 1, like 1e10")),
    }
}
