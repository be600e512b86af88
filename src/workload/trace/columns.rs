//! `--columns` / `"columns"`: which header column or log field plays
//! which role (time, key, weight, count) when the file's names are not
//! ratelab's.

use crate::error::{Error, Result};

/// The roles a `--columns` entry may rename.
const ROLES: [&str; 4] = ["time", "key", "weight", "count"];

/// `--columns role=name,...`: which header name plays which role.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Columns(Vec<(String, String)>);

impl Columns {
    /// Parses `key=ip,count=hits` (roles: time, key, weight, count).
    ///
    /// # Examples
    ///
    /// ```
    /// use ratelab::workload::trace::Columns;
    ///
    /// let c = Columns::parse("key=ip, count=hits").unwrap();
    /// assert_eq!(c.rename("hits"), "count");
    /// assert_eq!(c.rename("other"), "other");
    /// assert!(Columns::parse("colour=ip").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<Columns> {
        let mut out: Vec<(String, String)> = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = |m: &str| Error::input(format!("--columns {s:?}: at {part:?}: {m}"));
            let (role, name) = part
                .split_once('=')
                .ok_or_else(|| bad("expected ROLE=NAME, e.g. key=ip"))?;
            let (role, name) = (role.trim(), name.trim());
            if !ROLES.contains(&role) {
                return Err(bad("expected a role: time, key, weight or count"));
            }
            if name.is_empty() {
                return Err(bad("expected a column name after '='"));
            }
            if out.iter().any(|(r, _)| r == role) {
                return Err(bad("this role is given twice"));
            }
            out.push((role.to_string(), name.to_string()));
        }
        if out.is_empty() {
            return Err(Error::input(format!(
                "--columns {s:?}: expected ROLE=NAME pairs, e.g. key=ip,count=hits"
            )));
        }
        Ok(Columns(out))
    }

    /// The name given to a role, if any.
    pub fn get(&self, role: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(r, _)| r == role)
            .map(|(_, n)| n.as_str())
    }

    /// The role a header name plays (itself when not renamed).
    pub fn rename<'a>(&'a self, name: &'a str) -> &'a str {
        self.0
            .iter()
            .find(|(_, n)| n == name)
            .map_or(name, |(r, _)| r.as_str())
    }
}

impl Columns {
    /// Every (role, name) pair, in the order given.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(r, n)| (r.as_str(), n.as_str()))
    }
}

impl std::fmt::Display for Columns {
    /// As given: `key=ip,count=hits`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v: Vec<String> = self.pairs().map(|(r, n)| format!("{r}={n}")).collect();
        f.write_str(&v.join(","))
    }
}

impl std::str::FromStr for Columns {
    type Err = Error;
    fn from_str(s: &str) -> Result<Columns> {
        Columns::parse(s)
    }
}
