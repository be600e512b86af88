//! Tables rendered as Markdown and CSV from the same cells.

/// A table: a header row and rows of already-formatted cells.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// Column names.
    pub header: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with the given column names.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        Self {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row.
    pub fn push<S: Into<String>>(&mut self, row: impl IntoIterator<Item = S>) {
        self.rows.push(row.into_iter().map(Into::into).collect());
    }

    /// GitHub-flavoured Markdown.
    pub fn markdown(&self) -> String {
        let esc = |s: &str| s.replace('|', "\\|");
        let mut out = format!(
            "| {} |\n",
            self.header
                .iter()
                .map(|h| esc(h))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        out.push_str(&format!("|{}\n", "---|".repeat(self.header.len())));
        for row in &self.rows {
            out.push_str(&format!(
                "| {} |\n",
                row.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
            ));
        }
        out
    }

    /// RFC 4180 CSV.
    pub fn csv(&self) -> String {
        let field = |s: &str| {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        };
        let line =
            |cells: &[String]| cells.iter().map(|c| field(c)).collect::<Vec<_>>().join(",") + "\n";
        let mut out = line(&self.header);
        for row in &self.rows {
            out.push_str(&line(row));
        }
        out
    }

    /// Fixed-width text, right-aligned (what `run` prints).
    pub fn text(&self) -> String {
        let cols = self.header.len();
        let mut width = vec![0usize; cols];
        for row in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in row.iter().enumerate().take(cols) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            // Padded by hand: `format!`'s width is limited to u16::MAX and
            // panics past it (a 70 KB key is a valid cell).
            let mut line = String::new();
            for (i, c) in row.iter().enumerate() {
                let w = width.get(i).copied().unwrap_or(0) + 2;
                let pad = w.saturating_sub(c.chars().count());
                line.extend(std::iter::repeat_n(' ', pad));
                line.push_str(c);
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

impl Table {
    /// Fixed-width text in at most `max_width` columns (what `run` prints
    /// for tables whose first column holds long names): header cells may
    /// span lines (`\n`, aligned at the bottom); the first column is
    /// left-aligned and its long cells wrap at spaces onto lines of their
    /// own; the other columns are right-aligned, two spaces apart. Only if
    /// the other columns alone exceed `max_width` does a line run over it.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratelab::report::Table;
    /// let mut t = Table::new(["name", "excess\n(%)"]);
    /// t.push(["a short one", "1.5"]);
    /// t.push(["a name much too long for the column", "-71.6"]);
    /// let text = t.text_fit(24);
    /// assert!(text.lines().all(|l| l.chars().count() <= 24), "{text}");
    /// assert_eq!(
    ///     text,
    ///     "                  excess\n\
    ///      name                 (%)\n\
    ///      a short one          1.5\n\
    ///      a name much too    -71.6\n\
    ///      \u{20} long for the\n\
    ///      \u{20} column\n"
    /// );
    /// ```
    pub fn text_fit(&self, max_width: usize) -> String {
        let cols = self.header.len();
        if cols == 0 {
            return String::new();
        }
        let head: Vec<Vec<&str>> = self.header.iter().map(|h| h.lines().collect()).collect();
        let head_lines = head.iter().map(Vec::len).max().unwrap_or(1);
        let len = |s: &str| s.chars().count();
        let mut width = vec![0usize; cols];
        for (i, h) in head.iter().enumerate() {
            width[i] = h.iter().map(|l| len(l)).max().unwrap_or(0);
        }
        for row in &self.rows {
            for (i, c) in row.iter().enumerate().take(cols) {
                width[i] = width[i].max(len(c));
            }
        }
        let rest: usize = width[1..].iter().map(|w| w + 2).sum();
        let first_min = head[0].iter().map(|l| len(l)).max().unwrap_or(0).max(12);
        width[0] = width[0].min(max_width.saturating_sub(rest)).max(first_min);
        let line = |first: &str, cells: &[&str]| {
            let mut l = format!("{first:<w$}", w = width[0]);
            for (i, c) in cells.iter().enumerate() {
                l.push_str(&format!("{c:>w$}", w = width[i + 1] + 2));
            }
            l.trim_end().to_string() + "\n"
        };
        let mut out = String::new();
        for k in 0..head_lines {
            // Bottom-aligned: a one-line header sits on the last line.
            fn cell<'a>(h: &[&'a str], k: usize, lines: usize) -> &'a str {
                let skip = lines - h.len();
                if k < skip {
                    ""
                } else {
                    h[k - skip]
                }
            }
            let cells: Vec<&str> = head[1..].iter().map(|h| cell(h, k, head_lines)).collect();
            out.push_str(&line(cell(&head[0], k, head_lines), &cells));
        }
        for row in &self.rows {
            let name = row.first().map_or("", String::as_str);
            let wrapped = wrap(name, width[0]);
            let cells: Vec<&str> = (1..cols)
                .map(|i| row.get(i).map_or("", String::as_str))
                .collect();
            out.push_str(&line(wrapped.first().map_or("", String::as_str), &cells));
            for more in wrapped.iter().skip(1) {
                out.push_str(format!("  {more}").trim_end());
                out.push('\n');
            }
        }
        out
    }
}

/// `s` in lines of at most `width` characters, broken at spaces (a word
/// longer than `width` gets a line of its own); continuation lines are two
/// characters narrower (they are indented).
fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in s.split(' ') {
        let room = if lines.is_empty() {
            width
        } else {
            width.saturating_sub(2)
        };
        let need = cur.chars().count() + usize::from(!cur.is_empty()) + word.chars().count();
        if !cur.is_empty() && need > room {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    lines.push(cur);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_markdown_csv_and_text() {
        let mut t = Table::new(["a", "b"]);
        t.push(["1", "x,y"]);
        assert_eq!(t.markdown(), "| a | b |\n|---|---|\n| 1 | x,y |\n");
        assert_eq!(t.csv(), "a,b\n1,\"x,y\"\n");
        assert_eq!(t.text(), "  a    b\n  1  x,y\n");
    }

    #[test]
    fn a_cell_wider_than_u16_is_padded_not_a_panic() {
        let long = "k".repeat(70_000);
        let mut t = Table::new(["key", "n"]);
        t.push([long.as_str(), "1"]);
        t.push(["a", "22"]);
        let text = t.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[2].ends_with(" a  22"));
        assert_eq!(lines[1].chars().count(), lines[2].chars().count());
    }

    #[test]
    fn fitted_text_wraps_long_names_and_keeps_every_cell() {
        let mut t = Table::new(["algorithm", "memory", "limited\nexcess"]);
        t.push([
            "nginx limit_req per key (10m zone, nodelay) burst=20",
            "9.9 MiB",
            "+2498 (+1.46%)",
        ]);
        t.push(["GCRA", "1.9 MiB", "-122263 (-71.60%)"]);
        let text = t.text_fit(50);
        for l in text.lines() {
            assert!(l.chars().count() <= 50, "{l:?} in\n{text}");
        }
        let words: Vec<&str> = text.split_whitespace().collect();
        for w in "nginx limit_req per key (10m zone, nodelay) burst=20 -122263 (-71.60%)".split(' ')
        {
            assert!(words.contains(&w), "{w} missing from\n{text}");
        }
        assert_eq!(
            text.lines().next(),
            Some(format!("{:>50}", "limited").as_str())
        );
        // Nothing to wrap: one line per row, the name column as wide as needed.
        assert_eq!(t.text_fit(200).lines().count(), 4);
    }
}
